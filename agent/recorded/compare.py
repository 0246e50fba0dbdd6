"""What a replay compares: the harness's records, recorded against replayed, kind by kind (a difference fails the
replay), and with the tools run again, their outputs once volatile text is normalised (a difference is the world's).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.events import (
    Compacted,
    ContextOverflowed,
    Event,
    InnerIntent,
    InnerObserved,
    MemoryWritten,
    MessageAdded,
    ModelReplied,
    ProgramFiles,
    ResourceUpdated,
    RunStopped,
    ToolIntent,
    ToolObserved,
)
from core.types import Observation
from core.volatile import differences, normalise


@dataclass(frozen=True)
class Divergence:
    step: int
    what: str  # one line
    diff: str = ""  # unified diff, recorded -> replayed
    call_id: str = ""
    tool: str = ""


def compare_harness(recorded: Sequence[Event], replayed: Sequence[Event]) -> list[Divergence]:
    """Everything the harness produced, recorded against replayed, in order, kind by kind."""
    out: list[Divergence] = []
    for kind, what in HARNESS_RECORDS.items():
        out += _compare(
            [e for e in recorded if isinstance(e, kind)], [e for e in replayed if isinstance(e, kind)], what
        )
    old, new = ([e for e in events if isinstance(e, RunStopped)][-1:] for events in (recorded, replayed))
    out += _compare(old, new, lambda e: {"reason": e.reason, "outcome": e.outcome})
    return sorted(out, key=lambda d: d.step)


def _prompt(e: ModelReplied) -> dict:
    figures = {
        "messages": e.prompt_messages,
        "chars": e.prompt_chars,
        "counted_tokens": e.counted_tokens,
        "prefix_reused": e.prefix_reused,
    }
    return figures | ({"sha256": e.prompt_sha256} if e.prompt_sha256 is not None else {})  # older journals lack it


def _observation(e: ToolObserved | InnerObserved) -> dict:
    o = e.observation.model_dump(mode="json", exclude={"duration_s"})
    # Only the first line: in older journals a traceback tail naming that process's files followed.
    if e.observation.error_kind == "tool_raised":
        o["text"] = e.observation.text.split("\n", 1)[0]
    return o | {"submission": e.submission, "rejects_later": e.rejects_later if isinstance(e, ToolObserved) else None}


def _inner(e: InnerObserved) -> dict:
    return _observation(e) | {"parent": e.parent, "arguments": e.arguments, "end": e.end}


def _compaction(e: Compacted) -> dict:
    # The summariser's usage and attempts are the model's doing; the fold and its effect are the harness's.
    return e.model_dump(mode="json", include={"ok", "trigger", "version", "tokens_before", "tokens_after", "fold"})


def _overflow(e: ContextOverflowed) -> dict:
    # As a compaction's: the summariser's usage and attempts are the model's doing.
    return e.model_dump(mode="json", exclude={"seq", "ts", "summariser_usage", "attempts", "message"})


def memory_as_compared(e: MemoryWritten) -> dict:
    # An entry's id names the run that wrote it, and the replay is a run of its own: ids are compared without it.
    written = e.model_dump(mode="json", exclude={"seq", "ts"})
    for entry in written["entries"]:
        own = entry.pop("run_id") + "/"
        entry["id"] = entry["id"].removeprefix(own)
        entry["supersedes"] = entry["supersedes"] and entry["supersedes"].removeprefix(own)
    return written


HARNESS_RECORDS: dict[type, Callable[[Any], dict]] = {
    ModelReplied: _prompt,
    ToolIntent: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    ToolObserved: _observation,
    InnerIntent: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    InnerObserved: _inner,
    ProgramFiles: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    MessageAdded: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    ResourceUpdated: lambda e: e.model_dump(mode="json", exclude={"seq", "ts"}),
    MemoryWritten: memory_as_compared,
    Compacted: _compaction,
    ContextOverflowed: _overflow,
}


def _compare(recorded: Sequence[Event], replayed: Sequence[Event], what: Callable[[Any], dict]) -> list[Divergence]:
    out = []
    for old, new in zip(recorded, replayed, strict=False):  # the extras of either side are reported below
        a, b = what(old), what(new)
        b = {k: v for k, v in b.items() if k in a}  # a journal from before a figure existed is checked on the rest
        if old.step != new.step or a != b:
            out.append(
                Divergence(
                    old.step, f"{old.type} differs", _diff(a | {"step": old.step}, b | {"step": new.step}), *_call(old)
                )
            )
    for extra in recorded[len(replayed) :]:
        out.append(Divergence(extra.step, f"{extra.type} recorded, but the replay made none", "", *_call(extra)))
    for extra in replayed[len(recorded) :]:
        out.append(
            Divergence(extra.step, f"{extra.type} made by the replay, but the recording has none", "", *_call(extra))
        )
    return out


def _call(e: Event) -> tuple[str, str]:
    if isinstance(e, ToolObserved | InnerObserved):
        return e.observation.call_id, e.observation.tool
    if isinstance(e, ToolIntent | InnerIntent):
        return e.call_id, e.tool
    return "", ""


def _diff(a: dict, b: dict) -> str:
    old = json.dumps(a, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    new = json.dumps(b, indent=1, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, fromfile="recorded", tofile="replayed")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def compare_world(recorded: Sequence[Event], replayed: Sequence[Event], folders: Sequence[str]) -> list[Divergence]:
    """Tool outputs that changed, once volatile text is normalised: the world, not the harness. A model's calls and
    its programs' calls are compared each in their order."""
    return _world(recorded, replayed, folders, ToolObserved) + _world(recorded, replayed, folders, InnerObserved)


def _world(
    recorded: Sequence[Event],
    replayed: Sequence[Event],
    folders: Sequence[str],
    kind: type[ToolObserved] | type[InnerObserved],
) -> list[Divergence]:
    out = []
    old: list[ToolObserved | InnerObserved] = [e for e in recorded if isinstance(e, kind)]
    new: list[ToolObserved | InnerObserved] = [e for e in replayed if isinstance(e, kind)]
    for x, y in zip(old, new, strict=False):  # the extras of either side are reported below
        a, b = x.observation, y.observation
        if (a.call_id, a.status) != (b.call_id, b.status) or normalise(a.text, folders) != normalise(b.text, folders):
            what = f"status {a.status} -> {b.status}" if a.status != b.status else "output changed"
            out.append(Divergence(x.step, what, _text_diff(a, b, folders), a.call_id, a.tool))
    for extra in old[len(new) :]:
        o = extra.observation
        out.append(Divergence(extra.step, "recorded, but the replay stopped before it", "", o.call_id, o.tool))
    for extra in new[len(old) :]:
        o = extra.observation
        out.append(Divergence(extra.step, "replayed, but the recording has no such observation", "", o.call_id, o.tool))
    return out


def _text_diff(a: Observation, b: Observation, folders: Sequence[str]) -> str:
    names = (f"recorded {a.call_id}", f"replayed {b.call_id}")
    return differences(f"[{a.status}]\n{a.text}", f"[{b.status}]\n{b.text}", folders, names)
