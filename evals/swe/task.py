"""SWE-bench instance records, with the declared environment our runner and grader need.

The official fields keep their names and encodings (FAIL_TO_PASS and PASS_TO_PASS are
JSON-encoded lists), so records from SWE-bench load as they are; where the repository
comes from and how its environment is set up are declared per record, never hard-coded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.errors import HarnessError, describe_validation_error

SUITES = Path(__file__).resolve().parent / "suites"
ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+-\d+$")


class Environment(BaseModel):
    """How to build the instance's image on top of the SWE base image (network on during the build only)."""

    model_config = ConfigDict(extra="forbid")
    apt: list[str] = Field(default_factory=list, description="Debian packages to install")
    install: list[str] = Field(default_factory=list, description="shell commands run in /testbed as root")
    test_command: str = Field("python3 -m pytest -v -rA -p no:cacheprovider", description="test files are appended")


class SweInstance(BaseModel):
    model_config = ConfigDict(extra="ignore")  # SWE-bench records carry more fields than we use

    instance_id: str
    repo: str
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
    # Where the repository comes from: a bundled git archive or folder (our suites), or a
    # prebuilt image that already holds it at /testbed (users with SWE-bench's images).
    source: str | None = None
    image: str | None = None
    environment: Environment = Environment()

    @field_validator("instance_id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if not ID_PATTERN.match(v):
            raise ValueError("must look like owner__repo-N")
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

    def test_files(self) -> list[str]:
        return sorted({t.split("::")[0] for t in self.FAIL_TO_PASS + self.PASS_TO_PASS})


def load_instances(path: str | Path) -> list[SweInstance]:
    """Read a JSONL (or JSON list) file; a bad record is named by line and field."""
    path = Path(path)
    try:
        raw = path.read_text()
    except OSError as e:
        raise HarnessError(f"Cannot read task file {path}: {e.strerror}.") from None
    records = _records(raw, path)
    instances, seen = [], set()
    for where, record in records:
        try:
            inst = SweInstance.model_validate(record)
        except ValidationError as e:
            name = record.get("instance_id", "?") if isinstance(record, dict) else "?"
            raise HarnessError(describe_validation_error(e, f"Task file {path}, {where} (instance {name})")) from None
        if inst.source is None and inst.image is None:
            raise HarnessError(f"Task file {path}, {where} (instance {inst.instance_id}): set `source` (a git bundle or folder) or `image`.")
        if inst.source is not None and not (path.parent / inst.source).exists():
            raise HarnessError(f"Task file {path}, {where} (instance {inst.instance_id}): source {inst.source} does not exist.")
        if inst.instance_id in seen:
            raise HarnessError(f"Task file {path}, {where}: instance {inst.instance_id} appears twice.")
        seen.add(inst.instance_id)
        instances.append(inst.model_copy(update={"source": str(path.parent / inst.source) if inst.source else None}))
    return instances


def _records(raw: str, path: Path) -> list[tuple[str, object]]:
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


def suite_path(name: str) -> Path:
    """`builtin` or another bundled suite name, else a path to a JSONL file."""
    bundled = SUITES / name / "instances.jsonl"
    if bundled.exists():
        return bundled
    if Path(name).exists():
        return Path(name)
    known = sorted(p.name for p in SUITES.iterdir() if (p / "instances.jsonl").exists())
    raise HarnessError(f"No suite {name!r}: bundled suites are {', '.join(known) or '(none)'}; or pass a JSONL file.")
