"""How well a ranking finds what a patch changed.

recall@k: the share of the gold files (or definitions) among the first k, averaged over issues; an
issue whose patch changes two files and finds one in the top 5 counts 0.5 at k=5. MRR: the mean of
1/rank of the first gold file (0 past the ranking's end). Definition recall counts only the issues whose
patch changes at least one definition (tools.code definitions: functions, methods, classes).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

FILE_KS = (1, 5, 10)
FUNCTION_KS = (5, 10)


@dataclass
class Outcome:
    """One issue, one method: the gold and the ranking, best first, and what the ranking cost."""

    instance_id: str
    repo: str
    method: str
    gold_files: list[str]
    files: list[str]
    gold_functions: list[str]  # "path::Qualified.name"
    functions: list[str]
    build_s: float = 0.0  # building (or updating) the index this ranking used
    query_s: float = 0.0
    extra: dict = field(default_factory=dict)


def recall(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    return len(set(gold) & set(ranked[:k])) / len(gold) if gold else 0.0


def reciprocal_rank(gold: Sequence[str], ranked: Sequence[str]) -> float:
    wanted = set(gold)
    return next((1.0 / (i + 1) for i, x in enumerate(ranked) if x in wanted), 0.0)


def first_rank(gold: Sequence[str], ranked: Sequence[str]) -> int | None:
    wanted = set(gold)
    return next((i + 1 for i, x in enumerate(ranked) if x in wanted), None)


def summary(outcomes: Sequence[Outcome]) -> dict:
    """File recall@1/5/10 and MRR, definition recall@5/10, the number of issues each is over, and timings."""
    with_functions = [o for o in outcomes if o.gold_functions]
    out: dict = {"issues": len(outcomes), "issues_with_functions": len(with_functions)}
    for k in FILE_KS:
        out[f"file_recall@{k}"] = _mean([recall(o.gold_files, o.files, k) for o in outcomes])
    out["file_mrr"] = _mean([reciprocal_rank(o.gold_files, o.files) for o in outcomes])
    for k in FUNCTION_KS:
        out[f"function_recall@{k}"] = _mean([recall(o.gold_functions, o.functions, k) for o in with_functions])
    out["query_ms_p50"] = percentile([o.query_s * 1000 for o in outcomes], 50)
    out["query_ms_p95"] = percentile([o.query_s * 1000 for o in outcomes], 95)
    return out


def by_repository(outcomes: Sequence[Outcome]) -> dict[str, dict]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.repo].append(o)
    return {repo: summary(group) for repo, group in sorted(groups.items(), key=lambda g: -len(g[1]))}


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def percentile(xs: Sequence[float], p: float) -> float:
    if not xs:
        return 0.0
    ordered = sorted(xs)  # the nearest-rank percentile
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]
