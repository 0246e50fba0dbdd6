"""What every detector returns and the helpers they share: a finding (the step it flags, why, and the tokens
that step spent on it), the identity of a call, and the tokens a call or a step cost."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from agent.journal.fold import Step
from agent.models.base import estimate_tokens
from core.types import Observation, ToolCall
from core.volatile import normalise


@dataclass(frozen=True)
class Finding:
    detector: str
    step: int
    detail: str
    # What the flagged work cost: the completion tokens that produced it (a call's share of its reply) and the
    # tokens it put in the context (its output, or the harness's note), the latter estimated as characters / 4.
    tokens: int = 0
    after_compaction: bool = False  # a re-read of what a compaction since the first read dropped from the prompt


@dataclass(frozen=True)
class Detector:
    name: str
    title: str
    explanation: str
    find: Callable[[list[Step]], list[Finding]]


def call_key(call: ToolCall) -> tuple[str, str]:
    """Tool name and arguments, with JSON key order, spacing and volatile parts made irrelevant."""
    return _key(call.name, call.arguments)


@lru_cache(maxsize=4096)  # several detectors ask for each call's key
def _key(name: str, arguments: str) -> tuple[str, str]:
    try:
        args = json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):
        args = arguments.strip()
    return name, normalise(args)


def short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(call: ToolCall) -> str:
    return f"{call.name}({short(call.arguments, 60)})"


def call_tokens(step: Step, observation: Observation | None) -> int:
    """One call's cost: its share of the reply's completion tokens and the tokens of the output it added."""
    share = step.usage.completion_tokens // max(1, len(step.calls))
    return share + (estimate_tokens(observation.text) if observation is not None else 0)


def step_tokens(step: Step) -> int:
    """A whole step's cost: its completion tokens and everything it added to the context after the reply."""
    added = [o.text for o in step.observations] + [m.text for m in step.notes]
    return step.usage.completion_tokens + sum(estimate_tokens(t) for t in added)
