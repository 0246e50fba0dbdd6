"""Pair the runs of two batches by task id and seed (and, for forks, parent and branch step), so each difference
is measured on one task."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from evals.ab.records import RunRecord


@dataclass(frozen=True)
class Pair:
    a: RunRecord
    b: RunRecord


def key(run: RunRecord) -> tuple:
    """What two runs must share to be paired: the task and seed, and a fork's parent and branch step."""
    return run.task_id, run.seed, run.branch


def pair_runs(a: list[RunRecord], b: list[RunRecord]) -> tuple[list[Pair], list[RunRecord], list[RunRecord]]:
    """(pairs, runs of A without a partner, runs of B without a partner).

    Runs match on `key`; when a batch repeats a key, its runs pair up in the order they started. A run
    missing its seed matches only another run missing its seed.
    """
    by_key: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in sorted(b, key=lambda r: (r.started_at, r.run_id)):
        by_key[key(r)].append(r)
    pairs, lone_a = [], []
    for r in sorted(a, key=lambda r: (r.started_at, r.run_id)):
        partners = by_key.get(key(r))
        if partners:
            pairs.append(Pair(r, partners.pop(0)))
        else:
            lone_a.append(r)
    lone_b = [r for runs in by_key.values() for r in runs]
    return sorted(pairs, key=lambda p: (p.a.task_id, str(p.a.seed), str(p.a.branch))), lone_a, lone_b
