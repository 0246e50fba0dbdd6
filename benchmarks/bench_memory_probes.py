"""Knowledge-update probes with the agent's memory on and off, side by side in one run.

Three scripted runs whose world changes under the agent (a background edit of a config value, twice; a
failing test that passes once the agent fixes the code; a file the agent read replaced by a new
release's), under every compaction preset (and the study's `local_compact` policy), compaction forced
every 3 steps, the extractive summariser writing the working memory. After each fold the next prompt is
judged: does it show the value the agent noted last as current, and does it show an older one as current?

    .venv/bin/python benchmarks/bench_memory_probes.py [--sandbox local|docker] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.context_policy import Compact  # noqa: E402
from core.presets import PRESETS, load_policy  # noqa: E402
from evals.probes.knowledge import PROBES  # noqa: E402
from evals.probes.run import FOLD_EVERY, ProbeRun, run_suite  # noqa: E402

STUDY = Path(__file__).resolve().parent.parent / "evals" / "study" / "policies" / "local_compact.toml"


def row(runs: list[ProbeRun]) -> dict:
    folds = [f for r in runs for f in r.folds]
    return {
        "probes": len(runs),
        "latest_shown": sum(r.latest_shown for r in runs),
        "stale_shown": sum(r.stale for r in runs),
        "folds": len(folds),
        "folds_ok": sum(f.ok for f in folds),
        "folds_latest_shown": sum(f.latest_shown for f in folds),
        "folds_stale_shown": sum(bool(f.stale) for f in folds),
        "older_marked_superseded": sum(bool(f.marked) for f in folds if f.older),
        "folds_with_older": sum(bool(f.older) for f in folds),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandbox", default="local", choices=["local", "docker"])
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args()
    policies = [p for p in PRESETS.values() if any(isinstance(s, Compact) for s in p.context)]
    policies.append(load_policy(str(STUDY)))
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        runs = run_suite(PROBES, policies, Path(tmp), args.sandbox)
    took = time.perf_counter() - began
    print(f"{len(PROBES)} probes x {len(policies)} policies x memory on/off, {args.sandbox} sandbox, ")
    print(f"compaction forced every {FOLD_EVERY} steps, extractive summariser; {took:.1f} s\n")
    head = f"{'policy':<22} {'memory':<7} {'latest shown':>13} {'stale shown':>12} {'folds ok':>9} {'stale folds':>12} {'older marked':>13}"
    print(head)
    print("-" * len(head))
    table = []
    for policy in policies:
        for memory in (True, False):
            mine = [r for r in runs if r.policy == policy.name and r.memory == memory]
            figures = row(mine)
            table.append({"policy": policy.name, "memory": memory, **figures})
            print(
                f"{policy.name:<22} {'on' if memory else 'off':<7} "
                f"{figures['latest_shown']:>6}/{figures['probes']:<6} {figures['stale_shown']:>5}/{figures['probes']:<6} "
                f"{figures['folds_ok']:>3}/{figures['folds']:<5} "
                f"{figures['folds_stale_shown']:>5}/{figures['folds']:<6} "
                f"{figures['older_marked_superseded']:>5}/{figures['folds_with_older']:<7}"
            )
    on = [t for t in table if t["memory"]]
    off = [t for t in table if not t["memory"]]
    share = sum(t["latest_shown"] for t in on) / max(1, sum(t["probes"] for t in on))
    print(
        f"\nmemory on: {share:.0%} of probes show the latest value at every fold, "
        f"{sum(t['stale_shown'] for t in on)} show a superseded value as current; "
        f"memory off: {sum(t['probes'] - t['latest_shown'] for t in off)} of {sum(t['probes'] for t in off)} "
        f"miss the latest value at some fold, {sum(t['stale_shown'] for t in off)} show a superseded value as current"
    )
    if args.json:
        args.json.write_text(json.dumps({"sandbox": args.sandbox, "seconds": round(took, 1), "rows": table}, indent=1))


if __name__ == "__main__":
    main()
