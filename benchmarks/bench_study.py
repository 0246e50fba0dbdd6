"""A small live policy study on this machine, printed as the Markdown table of evals/study/README.md.

Runs `harness study`'s grid through the library (in-process engine by default), then prints each
point's per-policy figures: cached share beside the harness's ideal reuse, evictions, throughput,
TTFT and peak context. Keep it small on a shared CPU box; `--table FOLDER` only prints the table
of a study folder already written. With `--replicas 1,2 --router ...` the grid also runs the
model's CPU replicas on Ray Serve behind each router (harness[serve-replicas]) and prints the
router rows and pairs as well.

    .venv/bin/python benchmarks/bench_study.py [--task ledger --task chess] [--policy local_long --policy local_compact]
        [--seeds 0,1] [--concurrency 4] [--kv-cache-mb 384,96] [--max-steps 12] [--max-plies 8] [--sandbox local]
        [--replicas 1,2 --router round_robin,least_loaded,prefix,session] [--router-imbalance 4]
    .venv/bin/python benchmarks/bench_study.py --table runs/20261201-...-study-xxxx
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evals.study import StudySpec, run_study  # noqa: E402
from evals.study.report import markdown, routers_markdown  # noqa: E402
from evals.study.runner import study_json  # noqa: E402


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def tables(data: dict) -> str:
    with_routers = any(p.get("router") for p in data["points"])
    return markdown(data) + ("\n\n" + routers_markdown(data) if with_routers else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", type=Path, help="print the table of this study folder and stop")
    ap.add_argument("--model", default="local")
    ap.add_argument("--task", action="append")
    ap.add_argument("--policy", action="append")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--concurrency", default="4")
    ap.add_argument("--kv-cache-mb", default="384,96")
    ap.add_argument("--max-steps", type=int, default=12)
    ap.add_argument("--max-plies", type=int, default=8)
    ap.add_argument("--sandbox", default="local")
    ap.add_argument("--replicas", default="1")
    ap.add_argument("--router", default="prefix")
    ap.add_argument("--router-imbalance", type=int)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.table:
        print(tables(json.loads((args.table / "study.json").read_text())))
        return
    spec = StudySpec(
        model=args.model,
        tasks=args.task or ["ledger", "chess"],
        policies=args.policy or ["local_long", "local_compact"],
        seeds=ints(args.seeds),
        concurrency=ints(args.concurrency),
        kv_cache_mb=ints(args.kv_cache_mb),
        max_steps=args.max_steps,
        sandbox=args.sandbox,
        max_plies=args.max_plies,
        replicas=ints(args.replicas),
        routers=args.router.split(","),
        router_imbalance=args.router_imbalance,
    )
    start = time.perf_counter()
    study, folder = run_study(spec, args.out or Path(tempfile.mkdtemp(prefix="bench-study-")))
    print(tables(study_json(study)))
    print(
        f"\n{sum(len(p.runs) for p in study.points)} runs in {time.perf_counter() - start:.0f} s; study folder {folder}"
    )


if __name__ == "__main__":
    main()
