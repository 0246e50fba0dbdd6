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
    at_step: int | None = Field(None, description="the step its status was last seen at")


class FailedApproach(_Item):
    approach: str = Field(description="what was tried")
    why: str = Field("", description="why it failed: the error, the wrong assumption")
    at_step: int | None = Field(None, description="the step it failed at")
    source: str | None = Field(None, description="the tool call id (or artifact) that showed it failing")


class ArtifactRef(_Item):
    path: str = Field(description="a file or run-dir artifact the work depends on")
    note: str = ""
    at_step: int | None = Field(None, description="the step it was last seen at")


class Fact(_Item):
    about: str = Field(description="what it is about, named the same way each time: a file path, a command, a setting")
    value: str = Field(description="what was seen (or concluded) about it")
    kind: Literal["observation", "conclusion"] = Field(
        "observation", description="observation: read in a tool's output; conclusion: inferred from observations"
    )
    at_step: int | None = Field(None, description="the step it was observed at")
    source: str | None = Field(None, description="the tool call id or artifact it comes from")
    supersedes: str | None = Field(None, description="the older value of the same thing it replaced")


class Superseded(_Item):
    """A fact a newer value of the same thing replaced: kept, with the steps it held for."""

    about: str
    value: str
    from_step: int | None = None
    until_step: int | None = None  # the step the newer value was observed at
    by: str = ""  # the newer value


class WorkingMemory(_Item):
    goal: str = ""
    plan: list[str] = Field(default_factory=list)
    steps: list[StepStatus] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    failed_approaches: list[FailedApproach] = Field(default_factory=list, description="never dropped")
    open_questions: list[str] = Field(default_factory=list)
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict, description="handles: cwd, venv, servers, branch")
    facts: list[Fact] = Field(
        default_factory=list,
        description="what was observed, one value per thing, with the step and call it came from; a newer value "
        "of the same thing supersedes the older; never dropped otherwise",
    )
    superseded: list[Superseded] = Field(
        default_factory=list, description="older values of facts, with the steps they held for; kept by the harness"
    )


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


def _without_superseded(schema: dict[str, Any]) -> dict[str, Any]:
    """The memory's schema less `superseded`, which the harness keeps (supersede): a summariser gives a newer value."""
    properties = {k: v for k, v in schema["properties"].items() if k != "superseded"}
    defs = {k: v for k, v in schema.get("$defs", {}).items() if k != "Superseded"}
    return {**schema, "properties": properties, "$defs": defs}


# What the summariser's reply is held to where the model can be: the memory, in short entries, few of each, so
# that a small model's memory closes well inside a summary's cap (256 tokens for the embedded model's tests).
MEMORY_REPLY_SCHEMA = bounded(_without_superseded(MEMORY_SCHEMA), chars=120, items=3)


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


def supersede(previous: WorkingMemory, new: WorkingMemory, step: int) -> WorkingMemory:
    """A fact leaves the memory only when a newer value of the same thing supersedes it.

    A fact of the new memory about the same thing with another value supersedes the previous one, which is
    kept in `superseded` with the steps it held for; one the new memory left out is put back, unless the new
    memory lists it as superseded itself. A fact without a step is dated `step`, the last step folded (it
    was seen by then at the latest). `superseded` only grows."""
    stamped = [f if f.at_step is not None else f.model_copy(update={"at_step": step}) for f in new.facts]
    now = {f.about: i for i, f in enumerate(stamped)}
    retired = {(s.about, s.value) for s in new.superseded}
    kept = list(previous.superseded) + [s for s in new.superseded if s not in previous.superseded]
    back = []
    for old in previous.facts:
        i = now.get(old.about)
        if i is None:
            if (old.about, old.value) not in retired:
                back.append(old)  # dropped without being superseded: refused
            continue
        fact = stamped[i]
        if fact.value == old.value:  # the same value again: it holds since it was first seen
            stamped[i] = old
            continue
        kept.append(
            Superseded(about=old.about, value=old.value, from_step=old.at_step, until_step=fact.at_step, by=fact.value)
        )
        stamped[i] = fact if fact.supersedes else fact.model_copy(update={"supersedes": old.value})
    return new.model_copy(update={"facts": back + stamped, "superseded": kept})


def merged(previous: WorkingMemory, new: WorkingMemory, step: int) -> WorkingMemory:
    """What a fold keeps of the summariser's memory: every failed approach, and every fact until superseded;
    each item new in it without a step is dated `step`, the last step folded (seen by then at the latest)."""
    kept = supersede(previous, keep_failures(previous, new), step)
    return kept.model_copy(update={name: dated(getattr(previous, name), getattr(kept, name), step) for name in DATED})


DATED = ("steps", "failed_approaches", "artifacts")


def dated(before: list[Any], items: list[Any], step: int) -> list[Any]:
    return [x if x.at_step is not None or x in before else x.model_copy(update={"at_step": step}) for x in items]


SUPERSEDED_HEADER = "Superseded (kept for the record, no longer current):"
SUPERSEDED_SHOWN = 8


def memory_text(memory: WorkingMemory, version: int, steps: tuple[int, int] | None = None) -> str:
    """The memory as the model reads it: a short header and canonical JSON (sorted keys, so
    the same memory always renders to the same bytes), then what was superseded, one line each."""
    span = f" (steps {steps[0]}-{steps[1]} folded)" if steps else ""
    body = json.dumps(current_json(memory), sort_keys=True, indent=1, ensure_ascii=False)
    head = f"[Working memory v{version}{span}: what earlier steps established. Trust it over your assumptions.]"
    return f"{head}\n{body}" + superseded_text(memory.superseded)


def current_json(memory: WorkingMemory) -> dict[str, Any]:
    """The memory as JSON without its superseded values, facts while there are none, or unknown steps and sources."""
    skip = {"superseded"} | ({"facts"} if not memory.facts else set())
    return memory.model_dump(mode="json", exclude=skip, exclude_none=True)


def superseded_text(items: list[Superseded]) -> str:
    """Superseded values, newest first, one line each; '' when there are none."""
    if not items:
        return ""
    lines = [
        f'- {s.about}: "{s.value}", held from step {s.from_step} until step {s.until_step}, superseded by "{s.by}"'
        for s in reversed(items[-SUPERSEDED_SHOWN:])
    ]
    if len(items) > SUPERSEDED_SHOWN:
        lines.append(f"- and {len(items) - SUPERSEDED_SHOWN} older superseded value(s), kept in the memory")
    return f"\n{SUPERSEDED_HEADER}\n" + "\n".join(lines)


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
    # The agent's memory (the `memory` tool's notes) as this fold left it (memory.notes.run_note): the newest
    # fold's follows the working-memory notes. None: the run keeps no memory, or had changed none of it yet.
    memory_text: str | None = None
