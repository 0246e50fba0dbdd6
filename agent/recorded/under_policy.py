"""What another policy would have made of a recorded run before its first reply: the tools it would have offered
and the opening it would have sent (`harness rerender` counts each policy's prompts with these).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from agent.journal.store import RunInfo
from agent.program_calls import offer
from core.context_policy import RepoMap
from core.events import Event, MessageAdded
from core.policy import CodeToolName, HarnessPolicy
from tools.base import Registry, Tool
from tools.code_mode.tool import NAME as RUN_CODE

CODE_TOOL_NAMES = get_args(CodeToolName)


def offered_under(other: HarnessPolicy, info: RunInfo, tools: list[Tool], program: list[Tool]) -> list[Tool]:
    """The tools `other` would have offered on this run: the run's own (those its programs could call too), less
    the memory tool and the code tools `other` does not name, with the code tools it names that the run lacked,
    offered as `other`'s dispatch mode offers them (run_code over the rest, in code mode). Unchanged, the run's
    own list as recorded."""
    every = [t for t in tools if t.name != RUN_CODE]
    every += [t for t in program if t.name not in {x.name for x in every}]
    kept = [t for t in every if (t.name != "memory" or other.memory.tool)]
    kept = [t for t in kept if t.name not in CODE_TOOL_NAMES or t.name in other.code_tools]
    missing = [n for n in other.code_tools if n not in {t.name for t in kept}]
    if missing:
        from tools.code.tools import CODE_TOOLS  # the code index's libraries load only where a policy names them

        kept += [CODE_TOOLS[n] for n in missing]
    mode = (info.policy.get("dispatch") or {}).get("mode", "calls")
    if mode == other.dispatch.mode and [t.name for t in kept] == [t.name for t in every]:
        return tools
    offered, _ = offer(Registry.of(kept), other)
    return list(offered)


def opening_under(other: HarnessPolicy, events: Sequence[Event], info: RunInfo) -> tuple[Sequence[Event], str | None]:
    """The journal as `other` would have opened the run: without the repository map the run's opening carried
    when `other` has no repo_map step. A run opened without a map keeps its opening under a policy with one (a
    re-render has no files to map): the note says so."""
    made = info.task.get("repo_map")
    wants = any(isinstance(s, RepoMap) for s in other.context)
    if made and not wants:
        tail = f"\n\n{made}"
        for i, e in enumerate(events):
            if isinstance(e, MessageAdded) and e.message.role == "user" and e.message.text.endswith(tail):
                message = e.message.model_copy(update={"text": e.message.text[: -len(tail)]})
                return [*events[:i], e.model_copy(update={"message": message}), *events[i + 1 :]], None
    if wants and not made:
        return events, (
            f"under {other.name}: the run opened without a repository map and a re-render has no files to make "
            "one, so its prompts are counted without it"
        )
    return events, None
