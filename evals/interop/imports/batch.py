"""Many files into one batch folder, laid out as `harness swe` lays one out, so `harness report` and
`harness ab` read it (runs pair by instance id):

    <folder>/<instance>-<digest>/   one run directory per trajectory
    batch.json                      model, policy, cost (as a SWE batch's), and what was imported from where
    executor.json                   per run: done (imported now), reused (already there); per bad file: error
    predictions.jsonl               instance_id, model_name_or_path, model_patch: for runs that submitted a patch

Files are imported one at a time, each read, written and let go before the next, so memory stays that of
the largest file. A file that is no trajectory (a predictions file, a report beside the trajectories) is passed
over and named; one that is a trajectory but cannot be imported (cut short, damaged, an error in any reader) is
reported and skipped. Either way the others import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.journal.store import make_folder, write_json_atomic
from agent.models.pricing import PriceTable
from evals.executors import BatchCost, Budget, Done, Tally
from evals.interop.imports.detect import open_source, trajectories
from evals.interop.imports.form import BadTrajectory, NotTrajectory
from evals.interop.imports.grades import Grades, grade_run
from evals.interop.imports.write import import_run

SUFFIXES = (
    ".json",
    ".jsonl",
    ".traj",
    ".eval",
)  # what a folder is searched for; each file's format is read from its content


class ImportBatch(BaseModel):
    """batch.json of an imported batch: a SWE batch's fields, and the import's own."""

    model: str
    policy: str
    cost: BatchCost
    imported: dict[str, Any]


@dataclass
class Outcome:
    folder: Path
    runs: int = 0  # run directories the files gave, new and kept
    written: int = 0
    failed: list[tuple[Path, str]] = field(default_factory=list)
    passed_over: list[tuple[Path, str]] = field(default_factory=list)  # files that are no trajectory at all
    resolved: int = 0  # with --grades: runs graded resolved, and unresolved
    unresolved: int = 0
    ungraded: list[tuple[str, str]] = field(default_factory=list)  # (run, instance) the grades have no grade for
    unknown: list[str] = field(default_factory=list)  # instances graded that no run of the import has


def files_in(paths: list[Path]) -> list[Path]:
    """Each file named, and every trajectory-like file under each folder named, in a stable order."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and not _hidden(p, path))
        else:
            out.append(path)
    return out


def import_batch(
    files: list[Path],
    folder: Path,
    fmt: str,
    prices: PriceTable,
    on_file: Callable[[Path, str | None, bool], None] = lambda path, why, failed: None,
    grades: Grades | None = None,
) -> Outcome:
    make_folder(folder, "batch folder", exist_ok=True)
    outcome = Outcome(folder)
    tally = Tally(total=len(files))
    budget = Budget()
    order: list[str] = []
    patches: list[tuple[str, Path]] = []
    formats: dict[str, int] = {}
    models: dict[str, int] = {}
    agents: dict[str, int] = {}
    graded_ids: set[str] = set()
    for path in files:
        error, failed = None, False
        try:
            source = open_source(path, fmt)
            for t in trajectories(source):
                run_dir, written = import_run(t, source, folder, prices)
                summary = json.loads((run_dir / "summary.json").read_text())
                budget.count((summary.get("cost_usd"), summary.get("unpriced_calls", 0)))
                if written:
                    tally.finished(Done(run_dir.name))
                else:
                    tally.reused(run_dir.name)
                order.append(run_dir.name)
                outcome.runs += 1
                outcome.written += written
                for seen, key in ((formats, t.format), (models, summary["model"]), (agents, t.agent)):
                    seen[key] = seen.get(key, 0) + 1
                if (run_dir / "artifacts" / "model.patch").is_file():
                    patches.append((t.instance_id, run_dir))
                if grades is not None:
                    graded_ids.add(t.instance_id)
                    _count(outcome, run_dir.name, t.instance_id, grade_run(run_dir, t.instance_id, grades))
        except NotTrajectory as e:
            error = str(e)
            outcome.passed_over.append((path, error))
        except Exception as e:  # a bad file never costs the others: a reader's error is that file's, said in a line
            error = (
                str(e) if isinstance(e, BadTrajectory) else f"{path}: could not be imported ({type(e).__name__}: {e})"
            )
            failed = True
            outcome.failed.append((path, error))
            tally.finished(Done(str(path), error=error))
            order.append(str(path))
        on_file(path, error, failed)
    if grades is not None:
        outcome.unknown = sorted(set(grades.by_instance) - graded_ids)
    tally.write(folder / "executor.json", order)
    record = ImportBatch(
        model=_most(models),
        policy=_most(agents),
        cost=budget.record(),
        imported={
            "formats": formats,
            "files": len(files),
            "runs": outcome.runs,
            "written": outcome.written,
            "failed": [{"file": str(p), "error": e} for p, e in outcome.failed],
            "passed_over": [{"file": str(p), "why": e} for p, e in outcome.passed_over],
            **({"grades": _grades_record(grades, outcome)} if grades is not None else {}),
        },
    )
    write_json_atomic(folder / "batch.json", record.model_dump(mode="json"))
    _predictions(folder / "predictions.jsonl", patches, record.model)
    return outcome


def _count(outcome: Outcome, run: str, instance_id: str, resolved: bool | None) -> None:
    if resolved is None:
        outcome.ungraded.append((run, instance_id))
    elif resolved:
        outcome.resolved += 1
    else:
        outcome.unresolved += 1


def _grades_record(grades: Grades, outcome: Outcome) -> dict[str, Any]:
    return {
        "source": grades.source,
        "resolved": outcome.resolved,
        "unresolved": outcome.unresolved,
        "ungraded": [run for run, _ in outcome.ungraded],
        "unknown": len(outcome.unknown),
    }


def _predictions(path: Path, patches: list[tuple[str, Path]], model: str) -> None:
    """SWE-bench's predictions file, read one patch at a time from the run directories."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for instance_id, run_dir in patches:
            patch = (run_dir / "artifacts" / "model.patch").read_text()
            f.write(json.dumps({"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}) + "\n")
    tmp.replace(path)


def _most(counts: dict[str, int]) -> str:
    return max(counts, key=lambda k: counts[k]) if counts else ""


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)
