"""Drift in a run and over runs. A run's in a sentence: its drift findings and the tokens spent on them. Over runs,
for each drift detector: how many runs have it, how often and what it cost, split by outcome (resolved or not,
where the runs were graded), the table a batch report shows.

Counts are per run: the share of runs with at least one finding, the mean number of findings per run and the
mean tokens spent on them per run (evals.reports.finding says how a finding's tokens are counted). Re-reads
say how many followed a compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.models.base import estimate_tokens
from evals.reports.detectors import BY_NAME, DRIFT
from evals.reports.finding import Detector, Finding
from evals.reports.load import RunData

GROUPS = (("all", None), ("resolved", True), ("not resolved", False))


@dataclass(frozen=True)
class Cell:
    runs: int  # runs in the group
    hit: int  # runs with at least one finding
    findings: int
    tokens: int
    after_compaction: int

    @property
    def share(self) -> float:
        return self.hit / self.runs if self.runs else 0.0

    @property
    def per_run(self) -> float:
        return self.findings / self.runs if self.runs else 0.0

    @property
    def tokens_per_run(self) -> float:
        return self.tokens / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class DriftRow:
    detector: Detector
    cells: dict[str, Cell]  # by group: all, and resolved / not resolved where runs were graded


def drift_line(run: RunData) -> str:
    """How many steps went nowhere and what they cost, in a sentence."""
    drift = [f for f in run.findings if f.detector in DRIFT]
    spent = sum(f.tokens for f in drift)
    total = run.summary.tokens.completion + sum(estimate_tokens(o.text) for s in run.steps for o in s.observations)
    after = sum(f.after_compaction for f in drift)
    share = f" ({spent / total:.0%} of its completion and output tokens)" if total else ""
    return (
        f"{len(drift)} drift findings in {len({f.step for f in drift})} of {len(run.steps)} steps, "
        f"{spent:,} tokens spent on them{share}" + (f"; {after} re-reads followed a compaction" if after else "") + "."
    )


def drift_rows(runs: Sequence[tuple[list[Finding], bool | None]]) -> list[DriftRow]:
    """One row per drift detector over runs given as (findings, verdict); a verdict group appears where some run
    has that verdict."""
    groups = [(name, v) for name, v in GROUPS if v is None or any(verdict is v for _, verdict in runs)]
    rows = []
    for name in DRIFT:
        cells = {}
        for label, verdict in groups:
            picked = [[f for f in found if f.detector == name] for found, v in runs if verdict is None or v is verdict]
            cells[label] = Cell(
                runs=len(picked),
                hit=sum(bool(fs) for fs in picked),
                findings=sum(len(fs) for fs in picked),
                tokens=sum(f.tokens for fs in picked for f in fs),
                after_compaction=sum(f.after_compaction for fs in picked for f in fs),
            )
        rows.append(DriftRow(BY_NAME[name], cells))
    return rows


def drift_markdown(rows: list[DriftRow]) -> list[str]:
    """The table as markdown: the share of runs with the finding, findings per run and tokens per run, over all
    runs and, in parentheses, over the resolved and the unresolved ones where the runs were graded."""
    if not rows:
        return []
    split = len(rows[0].cells) == len(GROUPS)
    lines = [
        "| finding | runs with it | findings per run | tokens per run |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        c = row.cells
        after = c["all"].after_compaction
        lines.append(
            f"| {row.detector.title}"
            + (f" ({after} after a compaction)" if row.detector.name == "re_read" else "")
            + f" | {_cell(c, split, lambda x: f'{x.share:.0%}')} | {_cell(c, split, lambda x: f'{x.per_run:.2f}')} "
            f"| {_cell(c, split, lambda x: f'{x.tokens_per_run:,.0f}')} |"
        )
    if split:
        lines += ["", "Each cell: all runs (resolved / not resolved)."]
    return lines


def _cell(cells: dict[str, Cell], split: bool, fmt: Callable[[Cell], str]) -> str:
    whole = fmt(cells["all"])
    return f"{whole} ({fmt(cells['resolved'])} / {fmt(cells['not resolved'])})" if split else whole
