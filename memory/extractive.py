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
from collections.abc import Sequence

from core.memory_types import ArtifactRef, FailedApproach, StepStatus, WorkingMemory
from core.types import Message, ModelReply, Usage
from memory.summariser import SummaryRequest
from memory.tokens import TokenCounter

KEEP_STEPS = 8
KEEP_ARTIFACTS = 12
KEEP_DECISIONS = 8
WRITES = ("write_file", "replace")


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


def extract(previous: WorkingMemory, folded: Sequence[Message]) -> WorkingMemory:
    results = {m.tool_call_id: m for m in folded if m.role == "tool"}
    steps, failed = list(previous.steps), list(previous.failed_approaches)
    artifacts, decisions = list(previous.artifacts), list(previous.decisions)
    for m in folded:
        for call in m.tool_calls if m.role == "assistant" else ():
            result = results.get(call.id)
            ok = result is not None and result.status == "ok"
            label = _label(call.name, call.arguments)
            steps.append(StepStatus(step=label, status="done" if ok else "blocked"))
            if not ok and result is not None and label not in {f.approach for f in failed}:
                failed.append(FailedApproach(approach=label, why=_why(result.text)))
            path = _path(call.arguments)
            if path:
                note = "edited" if call.name in WRITES else "read"
                artifacts = [a for a in artifacts if a.path != path] + [ArtifactRef(path=path, note=note)]
                if call.name in WRITES and ok and f"edited {path}" not in decisions:
                    decisions.append(f"edited {path}")
    return previous.model_copy(
        update={
            "steps": steps[-KEEP_STEPS:],
            "failed_approaches": failed,
            "artifacts": artifacts[-KEEP_ARTIFACTS:],
            "decisions": decisions[-KEEP_DECISIONS:],
        }
    )


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
        memory = extract(request.previous, request.folded)
        text = json.dumps(memory.model_dump(mode="json"), sort_keys=True)
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
