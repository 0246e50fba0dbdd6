"""Asking a model for the next working memory, and checking what it says.

The summariser sees the previous memory and the steps being folded, rendered
as a readable transcript (or, in `fork` mode, as the agent's own prompt with
one instruction appended, so the provider's cache serves all of it). Its reply
must be one JSON object that validates as a `WorkingMemory`.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from core.context_policy import Limits
from core.events import SummaryReplied
from core.memory_types import MEMORY_REPLY_SCHEMA, MEMORY_SCHEMA, WorkingMemory, current_json
from core.policy import step_params
from core.types import Message, ModelReply
from memory.truncate import head_tail

SYSTEM = (
    "You maintain the working memory of an autonomous agent. You receive the previous memory and the "
    "steps the agent took since, and reply with the updated memory as one JSON object, nothing else."
)
RULES = (
    "Rules: drop what later steps made obsolete (finished plan items, answered questions, files no longer "
    "relevant); keep every failed approach with why it failed; keep paths, commands and handles exact; be brief. "
    "Facts: what a tool's output showed, one value per thing (`about` named the same way each time), with the "
    "step and call id it came from; when a later step shows a new value, give the fact the new value: the "
    "harness keeps the older one as superseded."
)
OBSERVATION_LIMITS = Limits(head_chars=1200, tail_chars=800)


@dataclass
class SummaryRequest:
    messages: list[Message]  # what a model summariser is sent
    previous: WorkingMemory
    folded: list[Message]  # the raw history being folded, for summarisers that read it directly
    cap: int  # max completion tokens
    tools: Sequence[Any] = field(default_factory=tuple)  # fork mode sends the agent's tools, to share its prefix
    steps: tuple[int, int] = (0, 0)  # the steps being folded, first and last
    at_step: int = 0  # the steps in the history when it is folded: the seed of the call is mixed with it
    attempt: int = 0  # earlier summariser calls of this compaction (a retry, a repair): mixed with the seed too


class Summariser(Protocol):
    def summarise(self, request: SummaryRequest) -> ModelReply: ...


class ModelSummariser:
    """Any ModelClient (by default the run's own model) as the summariser."""

    def __init__(self, client: Any, params: Any):
        self.client = client
        self.params = params

    def summarise(self, request: SummaryRequest) -> ModelReply:
        # A summary is a working memory in JSON, not a tool call: a policy that makes every agent reply
        # a call (the local preset's grammar) must not make the summariser's one. Where the model can be
        # held to a schema, it is, so even a small model's memory always parses.
        params = step_params(self.params, request.at_step, "summary", request.attempt).model_copy(
            update={
                "max_tokens": request.cap,
                "tool_choice": "none",
                "reply_schema": MEMORY_REPLY_SCHEMA,
            }
        )
        return self.client.complete(request.messages, list(request.tools), params)


class SummariserFailed(Exception):
    """A summariser call that failed when it was recorded, failing again with the recorded text."""


def describe_failure(e: Exception) -> str:
    return str(e) if isinstance(e, SummariserFailed) else f"{type(e).__name__}: {e}"


def request_digest(request: SummaryRequest) -> str:
    body = json.dumps(
        [
            [m.model_dump(mode="json") for m in request.messages],
            [getattr(t, "name", str(t)) for t in request.tools],
            request.cap,
        ],
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def answer(record: SummaryReplied, request: SummaryRequest) -> ModelReply:
    """The recorded outcome of a summariser call, after checking that `request` is the one recorded."""
    if record.request_sha256 != request_digest(request):
        raise SummariserFailed(
            f"The summariser request of step {record.step} differs from the recorded one ({request_digest(request)[:12]} "
            f"against {record.request_sha256[:12]}): the harness now compacts differently, so the recorded reply does not apply."
        )
    if record.reply is None:
        raise SummariserFailed(record.error or "the recorded summariser call failed")
    return record.reply


class RecordedSummariser:
    """Answers from a run's recorded summariser calls, in order: replay's summariser."""

    def __init__(self, records: Iterable[SummaryReplied]):
        self.records = deque(records)
        self.given = 0

    def summarise(self, request: SummaryRequest) -> ModelReply:
        if not self.records:
            raise SummariserFailed(
                f"The recorded run made {self.given} summariser calls and this one asks for another: "
                "the harness now compacts more often than it did."
            )
        self.given += 1
        return answer(self.records.popleft(), request)


def transcript(messages: Sequence[Message], first_step: int) -> str:
    """The folded steps as a person would read them: who did what and what came back."""
    lines, step = [], first_step - 1
    for m in messages:
        if m.role == "assistant":
            step += 1
            lines.append(f"## Step {step}")
            if m.text:
                lines.append(f"Agent said: {m.text}")
            lines.extend(f"Agent called {c.name} with {c.arguments}" for c in m.tool_calls)
        elif m.role == "tool":
            shown, _ = head_tail(m.text, OBSERVATION_LIMITS)
            lines.append(f"Result of {m.name} ({m.status or 'unknown'}):\n{shown}")
        else:
            lines.append(f"{m.role.capitalize()} said: {m.text}")
    return "\n".join(lines)


def instruction(previous: WorkingMemory, steps: tuple[int, int], in_prompt: bool) -> str:
    where = "in the conversation above" if in_prompt else "below"
    return (
        f"Fold steps {steps[0]}-{steps[1]} ({where}) into the working memory. Do not call tools.\n"
        f"Previous memory:\n{json.dumps(current_json(previous), sort_keys=True)}\n"
        f"{RULES}\nReply with one JSON object matching this schema:\n{json.dumps(MEMORY_SCHEMA, sort_keys=True)}"
    )


def fresh_request(previous: WorkingMemory, folded: Sequence[Message], steps: tuple[int, int]) -> list[Message]:
    body = instruction(previous, steps, in_prompt=False) + "\n\n" + transcript(folded, steps[0])
    return [Message(role="system", text=SYSTEM), Message(role="user", text=body)]


def fork_request(prompt: Sequence[Message], previous: WorkingMemory, steps: tuple[int, int]) -> list[Message]:
    return list(prompt) + [Message(role="user", text=instruction(previous, steps, in_prompt=True))]


def repair_request(request: list[Message], reply: ModelReply, problem: str) -> list[Message]:
    fix = f"That reply is not a valid working memory: {problem}. Reply with the corrected JSON object only."
    return request + [reply.message, Message(role="user", text=fix)]


def parse_memory(text: str) -> tuple[WorkingMemory | None, str | None]:
    """(memory, None) or (None, what is wrong) — the problem is sent back in the one repair attempt."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "it holds no JSON object"
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as e:
        return None, f"the JSON does not parse ({e})"
    try:
        return WorkingMemory.model_validate(data), None
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'memory'}: {err['msg']}" for err in e.errors()[:5])
        return None, f"it does not match the schema ({problems})"
