"""Localization over many issues: each repository at each issue's base commit, ranked by the code index
and by the baselines over the same files, with the gold patch's files and definitions as the answer.

Issues are taken repository by repository, and each index is built from the previous one of the same
repository (tools.code.index.build reuses every file whose bytes did not change), as a batch of agent
runs over one repository would; the first index of each repository is built from nothing, and its time
is the cold build time.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals.localize.baselines import PlainBM25, grep_rank, words
from evals.localize.dataset import Issue, changed_lines
from evals.localize.metrics import Outcome, percentile
from evals.localize.repos import commit_times, files_at, git_dir
from tools.code.index import CodeIndex, build
from tools.code.rank import Evidence, Weights, evidence, localize, ranking

METHODS = ("code", "bm25", "grep")
RANKED = 100  # how deep each ranking is kept (MRR counts 0 past it)


@dataclass
class Build:
    instance_id: str
    repo: str
    cold: bool
    wall_s: float
    cpu_s: float
    files: int
    reread: int  # files read anew (all of them when cold)


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    builds: list[Build] = field(default_factory=list)
    peak_rss_mb: float = 0.0


def run(
    issues: Sequence[Issue],
    repos: Path,
    methods: Sequence[str] = METHODS,
    variants: Mapping[str, Weights] | None = None,
    progress: Callable[[int, Issue, BatchResult], None] | None = None,
) -> BatchResult:
    """`variants`: more rankings of the code index, by name, each with its own weights (an ablation); they share
    the index and the default ranking's evidence, so they cost a few milliseconds each. `progress` is told of
    each issue done, with the result so far (a long batch can keep what it has)."""
    result = BatchResult()
    previous: dict[str, CodeIndex] = {}  # the last index of the repository at hand
    tokens: dict[str, list[str]] = {}  # plain BM25's tokens of each file, by its sha1, for the repository at hand
    done = 0
    for issue, git in in_order(issues, repos):
        files = files_at(git, issue.base_commit)
        before = previous.get(issue.repo)
        wall, cpu = time.perf_counter(), _cpu()
        index = build(files, previous=before)
        result.builds.append(
            Build(
                issue.instance_id,
                issue.repo,
                before is None,
                time.perf_counter() - wall,
                _cpu() - cpu,
                len(index.entries),
                sum(1 for e in index.entries if before is None or before.entry(e.path) is not e),
            )
        )
        if before is None:
            tokens.clear()
        previous = {issue.repo: index}
        changed = changed_lines(issue.patch)
        gold = list(changed)
        gold_functions = definitions(index, changed)
        for method in methods:
            result.outcomes.append(_rank(method, index, issue, gold, gold_functions, result.builds[-1], tokens))
        if variants:
            result.outcomes += _variants(variants, index, issue, gold, gold_functions)
        done += 1
        if progress is not None:
            progress(done, issue, result)
    result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def build_figures(result: BatchResult) -> dict:
    """Index build times: each repository's cold build (its first commit), and the builds from the previous
    commit's index (wall and CPU seconds; the CPU time is what a loaded machine does not inflate)."""
    cold = {
        b.repo: {"wall_s": round(b.wall_s, 2), "cpu_s": round(b.cpu_s, 2), "files": b.files}
        for b in result.builds
        if b.cold
    }
    warm = [b for b in result.builds if not b.cold]
    return {
        "cold": cold,
        "from_previous_commit": {
            "builds": len(warm),
            "wall_s_p50": round(percentile([b.wall_s for b in warm], 50), 2),
            "wall_s_p95": round(percentile([b.wall_s for b in warm], 95), 2),
            "files_reread_p50": percentile([b.reread for b in warm], 50),
        },
    }


def in_order(issues: Sequence[Issue], repos: Path) -> list[tuple[Issue, Path]]:
    """Repository by repository, each in the order of its base commits, so that each index differs little
    from the one before."""
    gits = {i.instance_id: git_dir(repos, i.instance_id, i.repo, i.base_commit) for i in issues}
    times: dict[str, int] = {}
    for git in set(gits.values()):
        times |= commit_times(git, sorted({i.base_commit for i in issues if gits[i.instance_id] == git}))
    ordered = sorted(issues, key=lambda i: (i.repo, times.get(i.base_commit, 0), i.instance_id))
    return [(i, gits[i.instance_id]) for i in ordered]


def definitions(index: CodeIndex, changed: dict[str, list[int]]) -> list[str]:
    """The innermost definition holding each changed line, as "path::Qualified.name"."""
    out: dict[str, None] = {}
    for path, lines in changed.items():
        entry = index.entry(path)
        if entry is None:
            continue
        for line in lines:
            inner = None
            for sym in entry.symbols:  # sorted by start, outer before inner
                if sym.line <= line <= sym.end:
                    inner = sym
            if inner is not None:
                out[f"{path}::{inner.qualname}"] = None
    return list(out)


def _variants(
    variants: Mapping[str, Weights], index: CodeIndex, issue: Issue, gold: list[str], gold_functions: list[str]
) -> list[Outcome]:
    made: dict[tuple, Evidence] = {}  # variants that differ only in weights share their evidence
    out = []
    for name, w in variants.items():
        key = (w.code_words, w.prior > 0, w.dense > 0 and w.embedder)
        if key not in made:
            made[key] = evidence(index, issue.problem_statement, w)
        found = ranking(index, made[key], RANKED, w)
        out.append(
            Outcome(
                issue.instance_id,
                issue.repo,
                name,
                gold,
                [path for path, _ in found.files],
                gold_functions,
                [f"{s.path}::{s.qualname}" for s, _ in found.functions],
            )
        )
    return out


def _rank(
    method: str,
    index: CodeIndex,
    issue: Issue,
    gold: list[str],
    gold_functions: list[str],
    built: Build,
    tokens: dict[str, list[str]],
) -> Outcome:
    text = issue.problem_statement
    outcome = Outcome(issue.instance_id, issue.repo, method, gold, [], gold_functions, [])
    if method == "code":
        start = time.perf_counter()
        ranking = localize(index, text, RANKED)
        outcome.query_s = time.perf_counter() - start
        outcome.build_s = built.wall_s
        outcome.files = [path for path, _ in ranking.files]
        outcome.functions = [f"{s.path}::{s.qualname}" for s, _ in ranking.functions]
        return outcome
    paths = index.paths
    texts = [e.text for e in index.entries]
    if method == "bm25":
        start = time.perf_counter()
        new = [e for e in index.entries if e.sha not in tokens]
        tokens.update(zip((e.sha for e in new), words([e.text for e in new])))
        for sha in tokens.keys() - {e.sha for e in index.entries}:
            del tokens[sha]
        plain = PlainBM25(paths, texts, [tokens[e.sha] for e in index.entries])
        outcome.build_s = time.perf_counter() - start
        start = time.perf_counter()
        outcome.files = plain.rank(text, RANKED)
        outcome.query_s = time.perf_counter() - start
        return outcome
    if method == "grep":
        start = time.perf_counter()
        outcome.files = grep_rank(paths, texts, text, RANKED)
        outcome.query_s = time.perf_counter() - start
        return outcome
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
