"""SWE-bench grades for imported runs (`harness import --grades FILE`), so reports and `harness ab` judge them on
resolved rather than on submitted.

A grading result comes in one of the shapes SWE-bench's tools write:

- the official harness's run report: `resolved_ids`, `unresolved_ids`, `empty_patch_ids`, `error_ids`;
- its log folder: one `report.json` per instance, `{instance_id: {"resolved": ...}}`, or the bare report in a
  folder named after the instance (`logs/<instance_id>/report.json`);
- a `results_summary.json`: `instances: [{instance_id, resolved}]`.

Each graded run gets a `grade.json` beside its run.json, `{instance_id: {"resolved": ..., "graded_by": NAME}}`,
the file `harness swe` leaves for its own runs and every reader folds into the outcome (evals.reports.outcome).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.journal.store import write_json_atomic
from core.errors import HarnessError
from core.text_files import read_text_file

SHAPES = (
    "the SWE-bench harness's report (`resolved_ids`...), a results_summary.json (`instances` [{instance_id, "
    "resolved}]), an instance's report.json ({instance_id: {resolved}}), or a folder of report.json files"
)
VERDICTS = {"resolved_ids": True, "unresolved_ids": False, "empty_patch_ids": False, "error_ids": False}


@dataclass(frozen=True)
class Grades:
    source: str  # the file's or folder's name, as each grade.json names it
    by_instance: dict[str, dict[str, Any]]  # each instance's grade as recorded, with `resolved` a bool


def read_grades(path: Path) -> Grades:
    """The grades in a file or a folder of report.json files; anything else is a HarnessError saying what is wrong."""
    path = Path(path)
    if path.is_dir():
        reports = sorted(path.rglob("report.json"))
        if not reports:
            raise HarnessError(f"Grades folder {path} holds no report.json; pass {SHAPES}.")
        found: dict[str, dict[str, Any]] = {}
        for report in reports:
            found.update(_instance_report(_json(report), report))
        return Grades(path.name, found)
    doc = _json(path)
    if isinstance(doc, dict) and "resolved_ids" in doc:
        return Grades(path.name, _run_report(doc, path))
    if isinstance(doc, dict) and "instances" in doc:
        return Grades(path.name, _summary(doc["instances"], path))
    return Grades(path.name, _instance_report(doc, path))


def _json(path: Path) -> Any:
    text = read_text_file(path, "grades file", f"Pass {SHAPES}.")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise HarnessError(f"Grades file {path} is not JSON ({e.msg}, line {e.lineno}); pass {SHAPES}.") from None


def _run_report(doc: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, resolved in VERDICTS.items():
        ids = doc.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise HarnessError(f"Grades file {path}: `{key}` is not a list of instance ids.")
        for i in ids:
            out.setdefault(i, {"resolved": resolved, "status": key.removesuffix("_ids")})
    return out


def _summary(instances: Any, path: Path) -> dict[str, dict[str, Any]]:
    if not isinstance(instances, list):
        raise HarnessError(f"Grades file {path}: `instances` is not a list of {{instance_id, resolved}}.")
    out: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(instances):
        if not (isinstance(item, dict) and isinstance(item.get("instance_id"), str)):
            raise HarnessError(f"Grades file {path}: instances[{n}] has no instance_id.")
        if not isinstance(item.get("resolved"), bool):
            raise HarnessError(
                f"Grades file {path}: instances[{n}] ({item['instance_id']}) has no true/false resolved."
            )
        out[item["instance_id"]] = {k: v for k, v in item.items() if k != "instance_id"}
    return out


def _instance_report(doc: Any, path: Path) -> dict[str, dict[str, Any]]:
    """{instance_id: report}, or one bare report in a folder named after its instance."""
    if isinstance(doc, dict) and isinstance(doc.get("resolved"), bool):
        return {path.parent.name: doc}
    if (
        isinstance(doc, dict)
        and doc
        and all(isinstance(v, dict) and isinstance(v.get("resolved"), bool) for v in doc.values())
    ):
        return dict(doc)
    raise HarnessError(f"Grades file {path} is not a SWE-bench grading result; pass {SHAPES}.")


def grade_run(run_dir: Path, instance_id: str, grades: Grades) -> bool | None:
    """Write the run's grade.json from the grades (the same grade already there is left as it is); the verdict,
    or None when the grades have none for its instance (a grade.json already there is kept)."""
    grade = grades.by_instance.get(instance_id)
    if grade is None:
        return None
    record = {instance_id: {**grade, "graded_by": grades.source}}
    path = run_dir / "grade.json"
    try:
        same = json.loads(path.read_text()) == record
    except (OSError, ValueError):
        same = False
    if not same:
        write_json_atomic(path, record)
    return bool(grade["resolved"])
