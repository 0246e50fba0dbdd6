"""The structured working memory that compaction folds old steps into, and the record of each fold.

It is a value, not prose: each field has one job, so a report can diff two
versions field by field, and a merge can enforce rules a summariser might
forget (failed approaches are never dropped).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepStatus(_Item):
    step: str = Field(description="a plan item, in a few words")
    status: Literal["todo", "doing", "done", "blocked"] = "todo"


class FailedApproach(_Item):
    approach: str = Field(description="what was tried")
    why: str = Field("", description="why it failed: the error, the wrong assumption")


class ArtifactRef(_Item):
    path: str = Field(description="a file or run-dir artifact the work depends on")
    note: str = ""


class WorkingMemory(_Item):
    goal: str = ""
    plan: list[str] = Field(default_factory=list)
    steps: list[StepStatus] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    failed_approaches: list[FailedApproach] = Field(default_factory=list, description="never dropped")
    open_questions: list[str] = Field(default_factory=list)
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict, description="handles: cwd, venv, servers, branch")


MEMORY_SCHEMA = WorkingMemory.model_json_schema()


def bounded(schema: Any, chars: int, items: int) -> Any:
    """`schema` with every string at most `chars` characters and every list and map at most `items`
    entries: a reply decoded under it closes its strings, so a model that would repeat itself inside
    one cannot run past its token cap there."""
    if isinstance(schema, list):
        return [bounded(s, chars, items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {k: bounded(v, chars, items) for k, v in schema.items()}
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema:
        out.setdefault("maxLength", chars)
    elif kind == "array":
        out.setdefault("maxItems", items)
    elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        out.setdefault("maxProperties", items)
    return out


# What the summariser's reply is held to where the model can be: the memory, in short entries.
MEMORY_REPLY_SCHEMA = bounded(MEMORY_SCHEMA, chars=200, items=5)


def keep_failures(previous: WorkingMemory, new: WorkingMemory) -> WorkingMemory:
    """A failed approach, once recorded, survives every later compaction.

    Summarisers drop things; this is the one loss we never accept, because an
    agent that forgets what failed tries it again.
    """
    known = {f.approach for f in new.failed_approaches}
    lost = [f for f in previous.failed_approaches if f.approach not in known]
    if not lost:
        return new
    return new.model_copy(update={"failed_approaches": lost + list(new.failed_approaches)})


def memory_text(memory: WorkingMemory, version: int, steps: tuple[int, int] | None = None) -> str:
    """The memory as the model reads it: a short header and canonical JSON (sorted keys, so
    the same memory always renders to the same bytes)."""
    span = f" (steps {steps[0]}-{steps[1]} folded)" if steps else ""
    body = json.dumps(memory.model_dump(mode="json"), sort_keys=True, indent=1, ensure_ascii=False)
    return f"[Working memory v{version}{span}: what earlier steps established. Trust it over your assumptions.]\n{body}"


class Fold(BaseModel):
    """One compaction: which steps it folded and the prompt text it contributes, frozen when made, so every
    later render of it is byte-identical and a prefix cache stays warm."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: int  # 1, 2, ...: the working memory's version after this fold
    upto: int  # history messages before this index are folded (a step boundary)
    first_step: int  # the steps this fold covers
    last_step: int
    memory: WorkingMemory  # the full memory after this fold
    text: str  # the user message this fold contributes to the prompt, frozen at fold time
    restart: bool  # True: `text` holds the whole memory and replaces every earlier fold's text
    at_step: int = 0  # the step after which the fold was made (`every_steps` counts from here)
    # Where the folded span begins. The first fold's start is where the memory notes go: after the task
    # and the steps `keep_first_tokens` kept. None: right after the task.
    start: int | None = None
