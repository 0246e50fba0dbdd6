#!/usr/bin/env bash
# `harness study` against `harness serve` on one machine: one server per KV cache size, each
# started, driven by the study's live runs (coding tasks in the local sandbox) and stopped in turn.
#
#   MODEL=model.gguf DEVICE=cuda CACHES="49152 4096" CONCURRENCY=64 SEEDS=32 MAX_STEPS=24 \
#       OUT=runs/served bash benchmarks/served_study.sh
#
# Each server's log and final /metrics land in OUT beside the study folders (OUT/kv<MiB>/...).
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
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
mkdir -p "$OUT"
most=$(tr , '\n' <<<"$CONCURRENCY" | sort -n | tail -1)
policy_args=$(for p in $POLICIES; do printf -- '--policy %s ' "$p"; done)
task_args=$(for t in $TASKS; do printf -- '--task %s ' "$t"; done)
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
