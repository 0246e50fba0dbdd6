"""SWE-bench instance records, read exactly as published, plus how this machine sets each one up.

Both published forms load as they are: the classic form (Verified, Lite), whose environment
comes from a spec table (evals/swe/specs.py), and the self-contained form of swebench 5.x,
whose records carry `image`, `eval_script`, `log_parser` and `eval_type`. FAIL_TO_PASS and
PASS_TO_PASS may be JSON-encoded lists, as published, or plain lists. `instance_id` is any
string. `source` (a git bundle or clone, relative to the task file) is this project's own
optional field; `spec`, `build_env` and a resolved `source` are filled in when a suite is
loaded (evals/swe/suite.py), so a loaded instance says everything needed to build it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file
from evals.swe.specs import Spec

DIFF_FILE = re.compile(r"^diff --git a/.* b/(.*)$", re.MULTILINE)


class SweInstance(BaseModel):
    model_config = ConfigDict(extra="ignore")  # published records carry more fields than we use

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    base_commit: str = Field(min_length=7)
    patch: str = ""
    test_patch: str = Field(min_length=1)
    problem_statement: str = Field(min_length=1)
    hints_text: str = ""
    created_at: str = ""
    version: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    environment_setup_commit: str = ""
    # The self-contained form (swebench 5.x): an image holding the repository at /testbed,
    # the script that runs the tests, and the name of the parser that reads its log.
    image: str | None = None
    eval_script: str | None = None
    log_parser: str | None = None
    eval_type: Literal["pass_and_fail", "fail_only"] = "pass_and_fail"
    # This project's own: a git bundle or clone holding base_commit (bundled suites).
    source: str | None = None
    # Filled in when the suite is loaded: the classic environment and the build-time variables.
    spec: Spec | None = None
    build_env: dict[str, str] = Field(default_factory=dict)
    # Filled in by the commands (evals/swe/flaky.py): how its tests run and are graded: overrides of
    # the pinned test variables, how many times the tests run, and the flaky tests left out of grading.
    test_env: dict[str, str] = Field(default_factory=dict)
    reruns: int = Field(default=1, ge=1)
    flaky_excluded: list[str] = Field(default_factory=list)
    flaky_list: str | None = None  # the file those came from

    @field_validator("instance_id")
    @classmethod
    def _one_path_part(cls, v: str) -> str:
        # The id names the instance's run and log folders.
        if "/" in v or "\0" in v or v in (".", ".."):
            raise ValueError("must be usable as a folder name (no '/')")
        return v

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, v):
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError as e:
                raise ValueError(f"must be a JSON-encoded list of test ids ({e.msg})") from None
        return v

    @field_validator("eval_type", mode="before")
    @classmethod
    def _no_eval_type(cls, v):
        return "pass_and_fail" if v in (None, "") else v

    def test_files(self) -> list[str]:
        """The files the test patch touches, in patch order (what the classic harness runs)."""
        return list(dict.fromkeys(DIFF_FILE.findall(self.test_patch)))


def read_records(path: str | Path) -> list[SweInstance]:
    """Read a JSONL file or a JSON list; a bad record is named by line and field."""
    path = Path(path)
    raw = read_text_file(path, "task file")
    instances, seen = [], set()
    for where, record in parse_records(raw, path):
        try:
            inst = SweInstance.model_validate(record)
        except ValidationError as e:
            name = record.get("instance_id", "?") if isinstance(record, dict) else "?"
            raise HarnessError(describe_validation_error(e, f"Task file {path}, {where} (instance {name})")) from None
        if inst.instance_id in seen:
            raise HarnessError(f"Task file {path}, {where}: instance {inst.instance_id} appears twice.")
        seen.add(inst.instance_id)
        if inst.source is not None:
            source = path.parent / inst.source
            if not source.exists():
                raise HarnessError(
                    f"Task file {path}, {where} (instance {inst.instance_id}): source {inst.source} does not exist."
                )
            inst = inst.model_copy(update={"source": str(source)})
        instances.append(inst)
    if not instances:
        raise HarnessError(
            f"Task file {path} holds no SWE-bench record; pass a JSON list or JSONL of instances (instance_id, repo, "
            "base_commit, patch, test_patch...)."
        )
    return instances


def parse_records(raw: str, path: Path) -> list[tuple[str, object]]:
    """A JSON list or JSONL text as (where in the file, record) pairs; bad JSON is a HarnessError naming the place."""
    if raw.lstrip().startswith("["):
        try:
            return [(f"record {i + 1}", r) for i, r in enumerate(json.loads(raw))]
        except json.JSONDecodeError as e:
            raise HarnessError(f"Task file {path} is not valid JSON: {e}") from None
    out = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"line {lineno}", json.loads(line)))
        except json.JSONDecodeError as e:
            raise HarnessError(f"Task file {path}, line {lineno} is not valid JSON: {e.msg}.") from None
    return out
