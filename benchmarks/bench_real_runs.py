"""Context policies on real runs: published trajectories imported, then re-rendered under every preset.

By default the runs are the 500 mini-swe-agent trajectories of Gemini 3 Pro on SWE-bench Verified (the same
files as bench_import.py: `--mirror`, a bare git mirror of gruckion/mini-swe-agent, or `--folder DIR` of your
own). They are imported with `harness import`, and `harness rerender BATCH --policy P... --json` rebuilds every
step's prompt under each policy, the replies and tool results held fixed, priced at the source model's prices
(cached input at its discount, an ideal prefix cache). The table gives, per policy, the prompt tokens, the
ideal cached share, the peak context and the counterfactual cost, as means across runs with 95% intervals,
beside what the provider recorded; the fit line says how our token counts track the recorded ones.

    .venv/bin/python benchmarks/bench_real_runs.py [--files 500] [--mirror DIR | --folder DIR] [--json OUT]
                                                   [--scale-to-recorded]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_import import MIRROR, extract  # noqa: E402
from evals.interop.imports.batch import files_in  # noqa: E402

POLICIES = ("append_only", "lean", "masked_batched", "compact_naive", "compact_cache_aware")
HARNESS = Path(sys.executable).with_name("harness")


def harness(*args: str) -> str:
    began = time.perf_counter()
    done = subprocess.run([str(HARNESS), *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some runs were left out, and named
        sys.exit(f"harness {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(f"harness {args[0]}: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return done.stdout


def spread(s: dict | None, fmt: str) -> str:
    if not s:
        return "-"
    return f"{fmt.format(s['mean'])} [{fmt.format(s['low'])}, {fmt.format(s['high'])}]"


def table(result: dict) -> str:
    lines = [
        "| policy | runs | prompt tokens per run | ideal cached share | peak context per run | cost per run | "
        "cost, all runs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["policies"]:
        total = r["cost_usd_total"]
        lines.append(
            f"| {r['policy']} | {r['runs']} | {spread(r['prompt_tokens'], '{:,.0f}')} | "
            f"{r['ideal_cached_share']:.1%} | {spread(r['peak_context'], '{:,.0f}')} | "
            f"{spread(r['cost_usd'], '${:.3f}')} | {'-' if total is None else f'${total:,.2f}'} |"
        )
    rec = result["recorded"]
    share = rec["cached_tokens"] / rec["prompt_tokens"] if rec["prompt_tokens"] else 0.0
    lines.append(
        f"| as recorded (the provider's counts and cache) | {result['runs']} | "
        f"{rec['prompt_tokens'] / max(1, result['runs']):,.0f} (mean) | {share:.1%} | - | "
        f"{spread(rec['cost_usd'], '${:.3f}')} | ${rec['cost_usd_total']:,.2f} |"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=500, help="how many trajectories to import")
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="a bare git mirror of gruckion/mini-swe-agent")
    ap.add_argument("--folder", type=Path, help="import this folder's trajectories instead of the mirror's")
    ap.add_argument("--json", type=Path, help="write rerender's JSON here")
    ap.add_argument(
        "--scale-to-recorded",
        action="store_true",
        help="count our tokens in the source model's (each run's fit scale), so every cost is in one tokenizer",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.folder is not None:
            folder = args.folder
            files = files_in([folder])[: args.files]
        else:
            folder = Path(tmp) / "trajs"
            files = extract(args.mirror, folder, args.files)
        print(f"{len(files)} trajectories from {args.folder or args.mirror}", file=sys.stderr)
        harness("import", str(folder), "--out", f"{tmp}/runs")
        batch = next(Path(tmp, "runs").iterdir())
        policies = [a for p in POLICIES for a in ("--policy", p)]
        scaled = ["--scale-to-recorded"] if args.scale_to_recorded else []
        result = json.loads(harness("rerender", str(batch), *policies, "--json", *scaled))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    fit = result.get("fit") or {}
    print(
        f"\nfit of our append-only counts to the recorded prompt tokens: scale {spread(fit.get('scale'), '{:.3f}')}, "
        f"R² {spread(fit.get('r2'), '{:.3f}')}, mean error after scaling {spread(fit.get('mean_abs_rel_error'), '{:.1%}')}"
    )
    print(f"runs: {result['runs']} re-rendered, {len(result['skipped'])} left out")
    for why in result["skipped"]:
        print(f"  left out: {why}")


if __name__ == "__main__":
    main()
