"""A server's request for input (elicitation), answered the way a write is approved.

A tool call that the server interrupts with a question gets its answer from,
in order: the person's recorded answer to that question (the n-th question of
this call, on a resumed or replayed run), the policy's unattended rule
(`defaults` accepts with the schema's defaults, `decline` declines), or, under
`ask`, nobody yet: the server is told the question was dismissed (`cancel`, on
which a server must not act), the call's result is set aside, and the run stops
`awaiting_approval` on the question. `harness approve RUN --call ID --yes
--answer JSON` records the answer and `harness resume` calls the tool again,
answering from the record. The question is untrusted text: cleaned, capped and
defused before anyone sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tools.mcp.text import DESCRIPTION_CHARS, clean_schema, untrusted

Rule = Literal["ask", "defaults", "decline"]


@dataclass(frozen=True)
class Question:
    """What a server asked, as a person may be shown it."""

    server: str
    message: str
    schema: dict[str, Any]  # the form's JSON schema; {} for a URL question
    url: str | None = None  # a URL question: the address the person is asked to visit

    def as_dict(self) -> dict[str, Any]:
        return {"server": self.server, "message": self.message, "schema": self.schema, "url": self.url}


@dataclass
class CallInputs:
    """The questions of one call, and the recorded answers to give them, in the order asked."""

    answers: Sequence[Mapping[str, Any]] = ()
    asked: list[Question] = field(default_factory=list)
    unanswered: list[Question] = field(default_factory=list)  # asked with no answer: only a person can give one


def question(server: str, params: Any) -> Question:
    url = getattr(params, "url", None)
    schema = getattr(params, "requested_schema", None)
    try:
        schema = clean_schema(schema) if isinstance(schema, dict) else {}
    except ValueError:
        schema = {}  # nested past any real form: shown without its schema
    return Question(
        server=server,
        message=untrusted(str(getattr(params, "message", "")), DESCRIPTION_CHARS),
        schema=schema,
        url=untrusted(url, DESCRIPTION_CHARS, keep_newlines=False) if isinstance(url, str) else None,
    )


def answer(asked: Question, inputs: CallInputs | None, rule: Rule) -> dict[str, Any]:
    """The answer to send ({"action", "content"}); under `ask` with nothing recorded, notes the question."""
    if inputs is not None:
        n = len(inputs.asked)
        inputs.asked.append(asked)
        if n < len(inputs.answers):
            return completed(inputs.answers[n], asked.schema)
    if rule == "defaults":
        return completed({"action": "accept", "content": {}}, asked.schema)
    if rule == "ask" and inputs is not None:
        inputs.unanswered.append(asked)
        return {"action": "cancel", "content": None}
    return {"action": "decline", "content": None}  # decline, or a question outside any call


def completed(given: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """An accepted form's content with the schema's defaults for what the answer leaves out (SEP-1034)."""
    action = given.get("action", "accept")
    if action != "accept":
        return {"action": action, "content": None}
    content = dict(given.get("content") or {})
    for name, prop in (schema.get("properties") or {}).items():
        if name not in content and isinstance(prop, Mapping) and "default" in prop:
            content[name] = prop["default"]
    return {"action": "accept", "content": content if schema.get("properties") is not None or content else None}
