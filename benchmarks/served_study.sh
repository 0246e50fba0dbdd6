#!/usr/bin/env bash
# `harness study` against `harness serve` on one machine: one server per KV cache size, each
# started, driven by the study's live runs (coding tasks in the local sandbox) and stopped in turn.
#
#   MODEL=model.gguf DEVICE=cuda CACHES="49152 4096" CONCURRENCY=64 SEEDS=32 MAX_STEPS=24 \
#       OUT=runs/served bash benchmarks/served_study.sh
#
# Each server's log and final /metrics land in OUT beside the study folders (OUT/kv<MiB>/...).
#
# With REPLICAS (and ROUTERS), the study starts the replicas itself, one engine per GPU on Ray Serve
# (harness[serve-replicas]), at each replicas count × router × cache size, in one study folder with
# the router rows and pairs (OUT/replicas/...):
#
#   MODEL=model.gguf DEVICE=cuda REPLICAS=1,8 ROUTERS=round_robin,least_loaded,prefix,session \
#       CACHES="4096" CONCURRENCY=64 SEEDS=32 MAX_STEPS=24 OUT=runs/replicas bash benchmarks/served_study.sh
set -euo pipefail
MODEL=${MODEL:?the GGUF file to serve}
DEVICE=${DEVICE:-cuda}
CACHES=${CACHES:-4096}                 # MiB of KV cache, one server each
CONCURRENCY=${CONCURRENCY:-64}         # runs in flight; several (64,256) sweep it
SEEDS=${SEEDS:-32}                     # seeds 0..SEEDS-1: each task runs once per seed under every policy
MAX_STEPS=${MAX_STEPS:-24}
POLICIES=${POLICIES:-"local_long local_compact"}
TASKS=${TASKS:-"ledger inventory"}
OUT=${OUT:-runs/served}
PORT=${PORT:-8100}
REPLICAS=${REPLICAS:-}                 # e.g. 1,8: engines per point, one GPU each (the study starts them)
ROUTERS=${ROUTERS:-round_robin,least_loaded,prefix,session}
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
mkdir -p "$OUT"
most=$(tr , '\n' <<<"$CONCURRENCY" | sort -n | tail -1)
policy_args=$(for p in $POLICIES; do printf -- '--policy %s ' "$p"; done)
task_args=$(for t in $TASKS; do printf -- '--task %s ' "$t"; done)
if [ -n "$REPLICAS" ]; then
    # shellcheck disable=SC2086
    python3 -m cli study --model "local:$MODEL" --device "$DEVICE" --replicas "$REPLICAS" --router "$ROUTERS" \
        --kv-cache-mb "$(tr ' ' , <<<"$CACHES")" --max-batched-tokens 8192 $task_args $policy_args \
        --seeds "$(seq -s, 0 $((SEEDS - 1)))" --concurrency "$CONCURRENCY" --max-steps "$MAX_STEPS" \
        --sandbox local --out "$OUT/replicas" 2>&1 | tee "$OUT/study-replicas.log"
    exit "${PIPESTATUS[0]}"
fi
for mb in $CACHES; do
    python3 -m cli serve --model "$MODEL" --device "$DEVICE" --port "$PORT" --kv-cache-mb "$mb" --name smollm2 \
        --max-num-seqs "$most" --max-batched-tokens 8192 >"$OUT/serve-kv$mb.log" 2>&1 &
    server=$!
    trap 'kill $server 2>/dev/null || true' EXIT
    for _ in $(seq 600); do
        get "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
        kill -0 $server 2>/dev/null || { cat "$OUT/serve-kv$mb.log"; exit 1; }
        sleep 0.5
    done
    echo "served on $DEVICE with $mb MiB of KV cache: $(date -u +%H:%M:%S)"
    # shellcheck disable=SC2086
    python3 -m cli study --model "openai-compatible:http://127.0.0.1:$PORT/v1#smollm2" $task_args $policy_args \
        --seeds "$(seq -s, 0 $((SEEDS - 1)))" --concurrency "$CONCURRENCY" --max-steps "$MAX_STEPS" \
        --sandbox local --out "$OUT/kv$mb"
    get "http://127.0.0.1:$PORT/metrics" >"$OUT/metrics-kv$mb.txt"
    kill $server
    wait $server || true
done
