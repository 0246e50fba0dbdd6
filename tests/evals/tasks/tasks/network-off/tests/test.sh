#!/bin/bash
# Reward 1 only if the agent wrote the list and the container truly cannot reach out: no interface but
# the loopback, and a connection to a public address fails.
mkdir -p /logs/verifier
reward=1
[ "$(ls /sys/class/net | sort)" = "lo" ] || { echo "interfaces besides lo: $(ls /sys/class/net)"; reward=0; }
[ "$(cat /app/interfaces.txt 2>/dev/null)" = "lo" ] || { echo "/app/interfaces.txt is not 'lo'"; reward=0; }
if python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)" 2>/dev/null; then
  echo "reached 1.1.1.1:80"; reward=0
fi
echo $reward > /logs/verifier/reward.txt
