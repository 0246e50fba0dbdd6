"""Export the agent-trace prompts as token ids, for replay where the harness cannot run.

The GPU benchmark (bench_gpu.py) replays the recorded trajectories through the
engine on a machine that has torch but not the harness's own dependencies, so the
prompts each context policy would have sent are rebuilt here, exactly as
bench_context.py rebuilds them (rerender + the default model's chat template and
tokenizer), and written as token ids. Each request is stored as the length of the
prefix it shares with the previous request plus the tokens after it, gzipped:
append-only prompts then cost only their new tokens.

    .venv/bin/python benchmarks/trace_prompts.py [--out benchmarks/data/trace_prompts.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DEFAULT_PATH = ROOT / "benchmarks" / "data" / "trace_prompts.json.gz"
POLICIES = ("append_only", "compact_naive", "compact_cache_aware")


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def encode_requests(prompts: list[tuple[str, list[int]]]) -> list[dict]:
    out, prev = [], []
    for kind, ids in prompts:
        keep = shared_prefix(prev, ids)
        out.append({"kind": kind, "keep": keep, "tail": ids[keep:]})
        prev = ids
    return out


def decode_requests(rows: list[dict]) -> list[tuple[str, list[int]]]:
    out, prev = [], []
    for r in rows:
        ids = prev[: r["keep"]] + r["tail"]
        out.append((r["kind"], ids))
        prev = ids
    return out


def load(path: Path) -> dict[str, dict[str, list[tuple[str, list[int]]]]]:
    data = json.loads(gzip.decompress(path.read_bytes()))
    return {t: {p: decode_requests(rows) for p, rows in pols.items()} for t, pols in data["trajectories"].items()}


def main() -> None:
    # The harness is imported here only: `load` must work where the harness's dependencies are absent.
    from bench_context import FIXTURES, TRIGGER_FRACTION, chat_dicts, policies

    from agent.journal.store import read_events
    from agent.recorded.rerender import rerender
    from engine.tokenizer import Tokenizer
    from engine.weights import default_model_path, load_checkpoint
    from memory.tokens import TokenCounter
    from tools.base import openai_schema
    from tools.builtin import STANDARD

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--trigger-fraction", type=float, default=TRIGGER_FRACTION)
    args = ap.parse_args()

    tokenizer = Tokenizer.from_checkpoint(load_checkpoint(default_model_path()))
    counter = TokenCounter(tokenizer.encode, "engine")
    result = {}
    for run_dir in sorted(p for p in FIXTURES.iterdir() if (p / "events.jsonl").exists()):
        events = read_events(run_dir)
        peak = rerender(events, [], counter, STANDARD).peak
        pols = policies(int(peak * args.trigger_fraction))
        result[run_dir.name] = {}
        for name in POLICIES:
            r = rerender(events, pols[name], counter, STANDARD, keep_prompts=True)
            prompts = []
            for req in r.requests:
                tools = [openai_schema(t) for t in req.tools] or None
                prompts.append((req.kind, tokenizer.encode_chat(chat_dicts(req.messages), tools)))
            result[run_dir.name][name] = encode_requests(prompts)
            total = sum(len(ids) for _, ids in prompts)
            print(
                f"{run_dir.name} / {name}: {len(prompts)} requests, {total:,} prompt tokens, "
                f"peak {max(len(ids) for _, ids in prompts):,}",
                file=sys.stderr,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"trigger_fraction": args.trigger_fraction, "tokenizer": "SmolLM2-135M-Instruct (embedded GGUF)"}
    args.out.write_bytes(gzip.compress(json.dumps({"meta": meta, "trajectories": result}).encode()))
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
