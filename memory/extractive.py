"""A summariser without a model: builds the next working memory by rules from the folded steps.

For places where no model may run — counterfactual re-rendering of an old
journal, and benchmarks whose replies are held fixed. It goes through the same
validation and cut-off handling as a model summariser. Its usage is what a
model summariser would have been billed: the tokens of the request it was
sent, and of the JSON it returns (a reply over the cap is cut off, as a model's
would be).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from core.memory_types import ArtifactRef, Fact, FailedApproach, StepStatus, Superseded, WorkingMemory
from core.types import Message, ModelReply, Usage
from memory.summariser import SummaryRequest
from memory.tokens import TokenCounter

KEEP_STEPS = 8
KEEP_ARTIFACTS = 12
KEEP_DECISIONS = 8
KEEP_FACTS = 8
GIST_CHARS = 80  # facts and the values they retire are most of an emergency fold: short, so it fits its cap
WRITES = ("write_file", "replace")
NOT_FACTS = (*WRITES, "submit", "memory", "describe_tool")  # what these return is about the call, not the world
UNTRACKED = "(no longer tracked)"


def _label(name: str, arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        return f"{name} {arguments[:80]}"
    if isinstance(args, dict):
        main = args.get("command") or args.get("path") or args.get("pattern") or args.get("name") or ""
        return f"{name} {str(main)[:100]}".strip()
    return name


def _why(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "FAILED" in line or "error" in line]
    return (errors[-1] if errors else lines[-1] if lines else "")[:160]


def extract(previous: WorkingMemory, folded: Sequence[Message], first_step: int = 0) -> WorkingMemory:
    """`first_step`: the number of the first folded step, which facts are dated by (0: unknown)."""
    results = {m.tool_call_id: m for m in folded if m.role == "tool"}
    steps, failed = list(previous.steps), list(previous.failed_approaches)
    artifacts, decisions = list(previous.artifacts), list(previous.decisions)
    facts = {f.about: f for f in previous.facts}
    step = first_step - 1
    for m in folded:
        step += m.role == "assistant"
        for call in m.tool_calls if m.role == "assistant" else ():
            result = results.get(call.id)
            ok = result is not None and result.status == "ok"
            label = _label(call.name, call.arguments)
            steps.append(StepStatus(step=label, status="done" if ok else "blocked"))
            if not ok and result is not None and label not in {f.approach for f in failed}:
                failed.append(FailedApproach(approach=label, why=_why(result.text)))
            path = _path(call.arguments) if call.name != "memory" else None  # /memories is no file of the task
            if path:
                note = "edited" if call.name in WRITES else "read"
                artifacts = [a for a in artifacts if a.path != path] + [ArtifactRef(path=path, note=note)]
                if call.name in WRITES and ok and f"edited {path}" not in decisions:
                    decisions.append(f"edited {path}")
            if result is not None and call.name not in NOT_FACTS:
                value = f"{result.status}: {_gist(result.text)}"
                if label not in facts or facts[label].value != value:
                    facts.pop(label, None)  # the newest last; a changed value supersedes the older (core.memory_types)
                    facts[label] = Fact(about=label, value=value, at_step=step if first_step else None, source=call.id)
    kept = list(facts.values())
    untracked = [
        Superseded(about=f.about, value=f.value, from_step=f.at_step, until_step=step or None, by=UNTRACKED)
        for f in kept[:-KEEP_FACTS]
        if f in previous.facts
    ]
    return previous.model_copy(
        update={
            "steps": steps[-KEEP_STEPS:],
            "failed_approaches": failed,
            "artifacts": artifacts[-KEEP_ARTIFACTS:],
            "decisions": decisions[-KEEP_DECISIONS:],
            "facts": kept[-KEEP_FACTS:],
            "superseded": untracked,
        }
    )


def _gist(text: str) -> str:
    """An output in one short line: its meaningful lines (a file's without their numbers), cut to GIST_CHARS."""
    lines = [re.sub(r"^\s*\d+\t", "", line).strip() for line in text.splitlines()]
    said = " / ".join(line for line in lines if line)
    return said if len(said) <= GIST_CHARS else said[: GIST_CHARS - 1] + "…"


def _path(arguments: str) -> str | None:
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    path = args.get("path") if isinstance(args, dict) else None
    return path if isinstance(path, str) and path not in (".", "") else None


class ExtractiveSummariser:
    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self.name = "extractive"

    def summarise(self, request: SummaryRequest) -> ModelReply:
        memory = extract(request.previous, request.folded, request.steps[0])
        text = json.dumps(memory.model_dump(mode="json", exclude_none=True), sort_keys=True)
        ids = self.counter.text_ids(text)
        finish = "stop"
        if len(ids) > request.cap:  # as a model would be: stopped mid-object at its cap
            text, finish = self._cut(text, request.cap), "length"
        usage = Usage(
            prompt_tokens=self.counter.prompt_tokens(request.messages), completion_tokens=min(len(ids), request.cap)
        )
        return ModelReply(
            message=Message(role="assistant", text=text), usage=usage, finish_reason=finish, model=self.name
        )

    def _cut(self, text: str, cap: int) -> str:
        # Characters in proportion to tokens: the reply only needs to be visibly incomplete.
        return text[: max(1, len(text) * cap // max(1, len(self.counter.text_ids(text))))]
