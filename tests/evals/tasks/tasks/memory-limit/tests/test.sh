#!/bin/bash
# Reward 1 only if the limit is task.toml's 256 MB (cgroup v2 or v1), the agent found it, and a 512 MB
# allocation does not fit.
mkdir -p /logs/verifier
limit=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
reward=1
[ "$limit" = "268435456" ] || { echo "memory limit is $limit, not 268435456"; reward=0; }
[ "$(cat /app/memory.txt 2>/dev/null)" = "$limit" ] || { echo "/app/memory.txt is not $limit"; reward=0; }
if python3 -c "b = b'x' * (512 * 2**20); print(len(b))" >/dev/null 2>&1; then
  echo "a 512 MB allocation fit"; reward=0
fi
echo $reward > /logs/verifier/reward.txt
