"""Flaky tests: found by running an instance's tests several times, and left out of grading by a list.

    harness swe ... --reruns K            each instance's tests run K times, each in a fresh container
    harness swe validate ... --reruns K   the gold patch runs K times; the flaky tests go to a file
    harness swe ... --exclude-flaky FILE  grading leaves that file's tests out

A test is flaky when its status (as the dataset's id looks it up in each log) differs between
runs; a test missing from one run's log differs too. Only the dataset's FAIL_TO_PASS and
PASS_TO_PASS tests count: no other test decides anything. The official fields come from the
first run; the flaky tests sit beside them.

The flaky-test list is JSON: `{"reruns": K, "flaky": {instance_id: [test id, ...]}}`. Leaving
a list's tests out never empties an instance's FAIL_TO_PASS: that would resolve it with nothing
checked, so such an instance keeps its tests and the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file
from evals.swe.task import SweInstance
from evals.swe.testlog import lookup

# The instance fields the commands fill in for grading (not part of a published record).
GRADING_FIELDS = ("test_env", "reruns", "flaky_excluded", "flaky_list")


class FlakyList(BaseModel):
    reruns: int
    flaky: dict[str, list[str]]


def flaky_tests(inst: SweInstance, runs: list[dict[str, str]]) -> list[str]:
    """The dataset's tests whose status differs between the runs (sorted; none with a single run)."""
    statuses = [lookup(found) for found in runs]
    tests = dict.fromkeys([*inst.FAIL_TO_PASS, *inst.PASS_TO_PASS])
    return sorted(t for t in tests if len({status(t) for status in statuses}) > 1)


def report_fields(inst: SweInstance, runs: list[dict[str, str]]) -> dict:
    """The fields a graded instance's report gets beside the official ones."""
    return {
        "flaky_tests": flaky_tests(inst, runs) if len(runs) > 1 else None,
        "excluded_flaky_tests": sorted(inst.flaky_excluded),
    }


def write_flaky_list(path: Path, reruns: int, flaky: dict[str, list[str]]) -> None:
    listed = FlakyList(reruns=reruns, flaky={k: sorted(v) for k, v in sorted(flaky.items()) if v})
    path.write_text(json.dumps(listed.model_dump(), indent=2, ensure_ascii=False) + "\n")


def read_flaky_list(path: Path) -> FlakyList:
    raw = read_text_file(path, "flaky-test list")
    try:
        return FlakyList.model_validate_json(raw)
    except ValidationError as e:
        raise HarnessError(
            describe_validation_error(e, f"Flaky-test list {path} (write one with `harness swe validate --reruns K`)")
        ) from None


def for_grading(
    instances: list[SweInstance],
    reruns: int = 1,
    test_env: dict[str, str] | None = None,
    exclude_flaky: Path | None = None,
) -> tuple[list[SweInstance], list[str]]:
    """The instances as the grader should run them, and a warning for each list entry that could not apply."""
    listed = read_flaky_list(exclude_flaky) if exclude_flaky is not None else FlakyList(reruns=0, flaky={})
    out, warnings = [], []
    for inst in instances:
        flaky = set(listed.flaky.get(inst.instance_id, []))
        update: dict = {"reruns": reruns, "test_env": dict(test_env or {})}
        if flaky:
            f2p = [t for t in inst.FAIL_TO_PASS if t not in flaky]
            if f2p:
                update |= {
                    "FAIL_TO_PASS": f2p,
                    "PASS_TO_PASS": [t for t in inst.PASS_TO_PASS if t not in flaky],
                    "flaky_excluded": sorted(flaky & {*inst.FAIL_TO_PASS, *inst.PASS_TO_PASS}),
                }
            else:
                warnings.append(
                    f"{inst.instance_id}: every FAIL_TO_PASS test is in {exclude_flaky}; it is graded on them anyway"
                )
        if exclude_flaky is not None:
            update["flaky_list"] = str(exclude_flaky)
        out.append(inst.model_copy(update=update))
    unknown = sorted(set(listed.flaky) - {i.instance_id for i in instances})
    if unknown:
        warnings.append(f"{exclude_flaky} names instances the dataset does not hold: {', '.join(unknown)}")
    return out, warnings
