"""Localization in a SWE run: when the agent first looked at a file its patch changes, what it had spent by
then, and whether a ranked search on the issue's text alone would have shown it that file at step 0.

The files to find are the gold patch's (from a rankings file: the outcomes `harness localize --issues ...
--out FILE` or benchmarks/bench_localize.py write, which carry each issue's gold files and its ranking, or
rows of method "gold" that carry the gold files of an issue nothing ranked), else
the run's own final patch (`artifacts/model.patch`). A step looked at a file when the file's path (as the
patch names it, relative to the repository) appears in one of its tool calls' arguments (a `cat`, a `grep`
over it, an edit) or in one of their outputs (a `grep -r` or a `find` listing it). The prompt tokens spent
are those of every model call up to and including that step's, as the provider recorded them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import HarnessError
from core.text_files import read_text_file
from evals.reports.load import RunData
from evals.swe.task import DIFF_FILE

TOP = 5  # a ranked search "had" the file when it was among its first TOP


@dataclass(frozen=True)
class Ranked:
    gold: tuple[str, ...]  # the gold patch's files
    files: tuple[str, ...] | None  # the code index's ranking for the text, best first; None: not ranked


@dataclass(frozen=True)
class RunLocalization:
    task_id: str
    targets: tuple[str, ...]
    source: str  # "gold patch" or "final patch"
    step: int | None  # the first step that looked at one of the targets; None: none did
    prompt_tokens: int | None  # spent up to and including that step
    steps: int
    resolved: bool  # graded resolved (an ungraded run counts as not)
    search_top: bool | None  # the ranked search's first TOP held one of the targets; None: no ranking for it


def read_rankings(path: Path) -> dict[str, Ranked]:
    """Instance id -> its gold files and the code index's ranking, from an outcomes JSONL file (an issue with
    only a "gold" row has no ranking)."""
    out: dict[str, Ranked] = {}
    lines = read_text_file(Path(path), "the rankings file").splitlines()
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            raise HarnessError(
                f"Rankings file {path}, line {n} is not JSON; pass the outcomes harness localize writes."
            ) from None
        if not isinstance(row, dict) or "instance_id" not in row:
            continue
        if row.get("method") == "code":
            out[row["instance_id"]] = Ranked(tuple(row.get("gold_files", ())), tuple(row.get("files", ())))
        elif row.get("method") == "gold":
            out.setdefault(row["instance_id"], Ranked(tuple(row.get("gold_files", ())), None))
    if not out:
        raise HarnessError(
            f"Rankings file {path} holds no ranking of method 'code' nor gold files (harness localize --issues --out)."
        )
    return out


def of_run(run: RunData, rankings: Mapping[str, Ranked] | None = None) -> RunLocalization | None:
    """None for a run with no files to find (not a SWE run, or no patch and no ranking for its task)."""
    ranked = (rankings or {}).get(run.summary.task_id)
    if ranked is not None and ranked.gold:
        targets, source = ranked.gold, "gold patch"
    else:
        targets, source = patch_files(run.dir), "final patch"
    if not targets:
        return None
    spent = 0
    found: int | None = None
    for step in run.steps:
        spent += step.usage.prompt_tokens or 0
        if any(_names(text, targets) for text in _seen(step)):
            found = step.n
            break
    return RunLocalization(
        task_id=run.summary.task_id,
        targets=targets,
        source=source,
        step=found,
        prompt_tokens=spent if found is not None else None,
        steps=run.summary.steps,
        resolved=run.verdict is True,
        search_top=bool(set(targets) & set(ranked.files[:TOP]))
        if ranked is not None and ranked.files is not None
        else None,
    )


def patch_files(run_dir: Path) -> tuple[str, ...]:
    try:
        patch = (Path(run_dir) / "artifacts" / "model.patch").read_text(errors="replace")
    except OSError:
        return ()
    return tuple(dict.fromkeys(DIFF_FILE.findall(patch)))


def _seen(step) -> Iterable[str]:
    for call in step.calls:
        yield call.arguments
    for obs in step.observations:
        yield obs.text


def _names(text: str, targets: Sequence[str]) -> bool:
    return any(t in text for t in targets)


def cards(loc: RunLocalization) -> list[tuple[str, str, str]]:
    """A run page's cards: (label, value, the line under it)."""
    where = f"first looked at a file the {loc.source} changes"
    found = (
        (f"step {loc.step}", f"{where}, after {loc.prompt_tokens:,} prompt tokens")
        if loc.step is not None and loc.prompt_tokens is not None
        else ("never", f"no step looked at a file the {loc.source} changes")
    )
    out = [("localized", *found)]
    if loc.search_top is not None:
        out.append(
            (
                "ranked search at step 0",
                "found it" if loc.search_top else "missed it",
                f"top {TOP} of search_code on the issue alone",
            )
        )
    return out


def figures(items: Sequence[RunLocalization]) -> dict:
    """Over all runs and split by outcome: how many looked at a target, after how many steps and prompt tokens
    (median and mean over the runs that did), and how often a ranked search at step 0 had one in its top 5."""
    out = {}
    for group, runs in (
        ("all", list(items)),
        ("resolved", [r for r in items if r.resolved]),
        ("unresolved", [r for r in items if not r.resolved]),
    ):
        found = [r for r in runs if r.step is not None]
        ranked = [r for r in runs if r.search_top is not None]
        steps = [r.step for r in found if r.step is not None]
        tokens = [r.prompt_tokens for r in found if r.prompt_tokens is not None]
        out[group] = {
            "runs": len(runs),
            "localized": len(found),
            "steps_median": statistics.median(steps) if steps else None,
            "steps_mean": statistics.fmean(steps) if steps else None,
            "share_of_steps_mean": statistics.fmean((r.step or 0) / max(r.steps, 1) for r in found) if found else None,
            "prompt_tokens_median": statistics.median(tokens) if tokens else None,
            "prompt_tokens_mean": statistics.fmean(tokens) if tokens else None,
            "ranked": len(ranked),
            "search_top5": sum(bool(r.search_top) for r in ranked),
        }
    return out


def localization_view(runs: Sequence[RunData], rankings: Mapping[str, Ranked] | None) -> dict | None:
    """What the batch page shows: the figures by outcome and each run's row; None when no run is a SWE run."""
    found = [(r, loc) for r in runs if (loc := of_run(r, rankings)) is not None]
    if not found:
        return None
    items = [loc for _, loc in found]
    return {"figures": figures(items), "rows": found, "sources": sorted({i.source for i in items}), "top": TOP}


def markdown(items: Sequence[RunLocalization]) -> list[str]:
    """The batch's localization, as lines of a markdown summary."""
    if not items:
        return []
    f = figures(items)
    sources = sorted({r.source for r in items})
    lines = [
        "",
        f"## Localization ({' and '.join(sources)})",
        "",
        "| runs | looked at a patched file | step (median / mean) | prompt tokens by then (median / mean) | "
        f"ranked search at step 0 had one in its top {TOP} |",
        "|---|---:|---:|---:|---:|",
    ]
    for group, g in f.items():
        steps = f"{g['steps_median']:.0f} / {g['steps_mean']:.1f}" if g["steps_median"] is not None else "—"
        tokens = (
            f"{g['prompt_tokens_median']:,.0f} / {g['prompt_tokens_mean']:,.0f}"
            if g["prompt_tokens_median"] is not None
            else "—"
        )
        search = f"{g['search_top5'] / g['ranked']:.0%} of {g['ranked']}" if g["ranked"] else "—"
        lines.append(f"| {group} ({g['runs']}) | {g['localized']} | {steps} | {tokens} | {search} |")
    return lines
