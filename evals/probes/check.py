"""What a prompt shows of a value: as current, as superseded, or not at all, in the notes a fold left.

The notes are the harness's record of what folded steps established: the working-memory notes
("[Working memory v..."), and the agent's memory ("[Memory ..."). Each is split into what it presents as
current and what as superseded: a working-memory note's JSON, less each fact's `supersedes` and an append
note's `removed`, against its superseded lines; a memory note's files against its superseded lines. Notes
are read in prompt order and the last to mention a value decides its status, as a reader takes a later
note over an earlier one. Verbatim steps are history, not a record: they are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core.memory_types import SUPERSEDED_HEADER
from core.types import Message
from memory.notes import SUPERSEDED

Status = Literal["current", "superseded"]
WORKING = "[Working memory v"
MEMORY = "[Memory "


def sections(text: str) -> tuple[str, str] | None:
    """(what a note presents as current, what it presents as superseded); None for a message that is no note."""
    if text.startswith(MEMORY):
        current, _, old = text.partition(SUPERSEDED)
        return current, _values(old)
    if not text.startswith(WORKING):
        return None
    body, _, old = text.partition("\n")[2].partition(SUPERSEDED_HEADER)
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return body, _values(old)
    data.pop("removed", None)  # an append note's removals are not current
    return "\n".join(_strings(data)), _values(old)


def _values(lines: str) -> str:
    """Of each superseded line (`- what: "value", held from ... superseded by ...`), the value it held."""
    return "\n".join(line.partition(", held from")[0] for line in lines.splitlines())


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "supersedes":  # a current fact names the value it replaced: that value is not current
                yield from _strings(v)


def statuses(prompt: Sequence[Message], values: Iterable[str]) -> dict[str, Status]:
    """Each value's status as the notes of `prompt` leave it; values no note mentions are left out."""
    out: dict[str, Status] = {}
    wanted = list(values)
    for m in prompt:
        split = sections(m.text) if m.role == "user" else None
        if split is None:
            continue
        current, old = split
        for value in wanted:
            if value in old:
                out[value] = "superseded"
            elif value in current:
                out[value] = "current"
    return out


@dataclass(frozen=True)
class FoldCheck:
    """One fold of one run: the prompt after it, judged."""

    step: int  # the fold was made after this step
    latest: str  # the value the agent had observed last
    older: list[str]
    latest_shown: bool  # the notes show it as current
    stale: list[str]  # older values the notes show as current
    marked: list[str]  # older values the notes show as superseded

    @property
    def ok(self) -> bool:
        return self.latest_shown and not self.stale


def check_fold(step: int, prompt: Sequence[Message], latest: str, older: Sequence[str]) -> FoldCheck:
    seen = statuses(prompt, [latest, *older])
    return FoldCheck(
        step,
        latest,
        list(older),
        seen.get(latest) == "current",
        [v for v in older if seen.get(v) == "current"],
        [v for v in older if seen.get(v) == "superseded"],
    )
