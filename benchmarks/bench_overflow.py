"""What overflow recovery costs on long runs whose outputs outgrow the window, side by side in one run.

Each generated run (tests/agent/costly_run.py: STEPS scripted steps, outputs from a line to ~50,000
tokens, then submit) runs under every window × `overflow.on_overflow`, seed by seed, the configurations
interleaved so that the machine's drift reaches them all alike. Per run: how it stopped and after how
many steps, the recoveries (emergency folds, cut rounds) and the tokens they dropped, the outputs cut at
dispatch, the summariser's calls for emergency folds (none under `extractive`: its memory is built by
rules), the prompt tokens sent over the run (the harness's own count) and what share of them an ideal
prefix cache would reuse, the largest prompt, and the wall time. The table gives each configuration's
mean over the seeds; --out keeps every run as JSON.

    .venv/bin/python benchmarks/bench_overflow.py [--seeds 0 1 2] [--steps 150] [--windows 8000 32000]
        [--summariser extractive|model] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.journal.store import read_events  # noqa: E402
from agent.session import RunSpec, start  # noqa: E402
from core.events import ContextOverflowed, ModelReplied, SummaryReplied  # noqa: E402
from tests.agent.costly_run import SummarisingModel, costly_run, policy  # noqa: E402
from tests.agent.long_run import fast_dir  # noqa: E402

MODES = ("compact", "truncate")
COLUMNS = {  # key: (header, how the seeds' figures are put together)
    "submitted": ("submitted", "count"),
    "steps": ("steps finished", "mean"),
    "recoveries": ("recoveries", "mean"),
    "folds": ("emergency folds", "mean"),
    "cut_rounds": ("cut rounds", "mean"),
    "dropped_tokens": ("tokens dropped", "mean"),
    "dispatch_cuts": ("outputs cut at dispatch", "mean"),
    "summariser_calls": ("summariser calls", "mean"),
    "prompt_tokens": ("prompt tokens sent", "mean"),
    "prefix_reuse": ("ideal prefix reuse", "mean"),
    "largest_prompt": ("largest prompt + max_tokens", "max"),
    "wall_s": ("wall s", "mean"),
}


def measure(seed: int, steps: int, window: int, on_overflow: str, summariser: str, root: Path) -> dict:
    made = costly_run(seed=seed, steps=steps)
    ran = policy(window, on_overflow, summariser, steps=steps)  # type: ignore[arg-type]
    began = time.perf_counter()
    summary, run_dir = start(RunSpec(made.task, SummarisingModel(made.replies), ran, root))
    wall = time.perf_counter() - began
    events = read_events(run_dir)
    actions = Counter(e.action for e in events if isinstance(e, ContextOverflowed))
    counted = [e.counted_tokens or 0 for e in events if isinstance(e, ModelReplied)]
    return {
        "seed": seed,
        "window": window,
        "on_overflow": on_overflow,
        "summariser": summariser,
        "stop": summary.stop_reason,
        "submitted": summary.stop_reason == "submitted",
        "steps": summary.steps,
        "recoveries": summary.overflow_recoveries,
        "folds": sum(1 for e in events if isinstance(e, ContextOverflowed) and e.fold is not None),
        "cut_rounds": actions["truncate"],
        "dropped_tokens": summary.overflow_dropped_tokens,
        "dispatch_cuts": summary.truncated_outputs,
        "summariser_calls": sum(isinstance(e, SummaryReplied) for e in events),
        "prompt_tokens": sum(counted),
        "prefix_reuse": summary.prefix_reuse_rate,
        "largest_prompt": max(counted) + ran.model.max_tokens,
        "wall_s": round(wall, 2),
    }


def combine(rows: list[dict], key: str, how: str) -> str:
    values = [r[key] for r in rows]
    if how == "count":
        return f"{sum(values)}/{len(values)}"
    if how == "max":
        return f"{max(values):,}"
    mean = statistics.mean(values)
    return f"{mean:.3f}" if key == "prefix_reuse" else f"{mean:.1f}" if key == "wall_s" else f"{mean:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--windows", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--summariser", choices=["extractive", "model"], default="extractive")
    parser.add_argument("--out", type=Path, help="write every run's figures here as JSON")
    args = parser.parse_args()
    print(
        f"{args.steps} steps, seeds {args.seeds}, windows {args.windows}, summariser {args.summariser}; "
        f"runs in {fast_dir()}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(dir=fast_dir()) as tmp:
        for seed in args.seeds:
            for window in args.windows:
                for mode in MODES:
                    row = measure(
                        seed, args.steps, window, mode, args.summariser, Path(tmp) / f"{seed}-{window}-{mode}"
                    )
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    header = ["window", "on_overflow", *(h for h, _ in COLUMNS.values())]
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for window in args.windows:
        for mode in MODES:
            runs = [r for r in rows if (r["window"], r["on_overflow"]) == (window, mode)]
            cells = [combine(runs, key, how) for key, (_, how) in COLUMNS.items()]
            print(f"| {window:,} | {mode} | " + " | ".join(cells) + " |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
