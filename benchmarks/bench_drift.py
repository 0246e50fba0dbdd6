"""Drift on real runs: how often each drift finding occurs over published trajectories, resolved against unresolved.

By default the runs are the 500 mini-swe-agent trajectories of Gemini 3 Pro on SWE-bench Verified (the files of
bench_import.py, from a bare git mirror of gruckion/mini-swe-agent, `--mirror`), graded by the folder's own
results_summary.json. They are imported with `harness import --grades`, and `harness report BATCH --format md`
gives the batch's drift table; this prints that table and the commands.

    .venv/bin/python benchmarks/bench_drift.py [--files 500] [--mirror DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_import import MIRROR, TRAJS, extract  # noqa: E402

GRADES = TRAJS.rsplit("/", 1)[0] + "/results_summary.json"
HARNESS = Path(sys.executable).with_name("harness")


def harness(*args: str) -> str:
    began = time.perf_counter()
    done = subprocess.run([str(HARNESS), *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"harness {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(f"harness {' '.join(args[:1])}: {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=500, help="how many trajectories to import")
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="a bare git mirror of gruckion/mini-swe-agent")
    ap.add_argument("--out", type=Path, help="keep the imported batch here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "runs"
        trajs = Path(tmp) / "trajs"
        files = extract(args.mirror, trajs, args.files)
        grades = Path(tmp) / "results_summary.json"
        grades.write_bytes(
            subprocess.run(
                ["git", "-C", str(args.mirror), "show", f"HEAD:{GRADES}"], capture_output=True, check=True
            ).stdout
        )
        print(f"{len(files)} trajectories from {args.mirror}, graded by {GRADES}", file=sys.stderr)
        print(harness("import", str(trajs), "--out", str(out), "--grades", str(grades)).strip(), file=sys.stderr)
        report = harness("report", str(out / "import-trajs"), "--format", "md")
    head = next(line for line in report.splitlines() if line.startswith("- **runs**"))
    print(head)
    print(report[report.index("## Drift") :].strip())


if __name__ == "__main__":
    main()
