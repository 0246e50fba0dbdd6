"""A model that replays replies from a list or a JSON/YAML file.

Used by tests, demos, benchmarks and replay. A file holds a list of replies (or
`{replies: [...]}`), each with optional `text`, `reasoning`, `tool_calls`
(`name` and `arguments` as an object or a raw string, optional `id`), `usage`
and `finish_reason`. Usage not given in the file is estimated from characters,
so demo runs show plausible token figures; a real provider reports its own.

A script that solves its task both ways holds `{calls: [...], code: [...]}`: the
model answers with `code` when the run offers run_code (dispatch.mode code or
both), with `calls` otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.models.base import estimate_tokens
from core.data_files import load_yaml
from core.errors import HarnessError, PermanentModelError, describe_validation_error
from core.policy import ModelParams
from core.text_files import read_text_file
from core.types import FinishReason, Message, ModelReply, Reasoning, ToolCall, Usage
from tools.base import Tool
from tools.code_mode.tool import NAME as RUN_CODE


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    @field_validator("arguments")
    @classmethod
    def _json(cls, arguments: dict[str, Any] | str) -> dict[str, Any] | str:
        """Arguments given as an object are sent as JSON: a YAML date or .nan has no JSON form."""
        if isinstance(arguments, dict):
            try:
                json.dumps(arguments, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"holds a value JSON cannot carry ({e}); quote it") from None
        return arguments


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    usage: Usage | None = None
    finish_reason: FinishReason | None = None


class ScriptedModel:
    def __init__(
        self,
        replies: Sequence[ScriptedReply | ModelReply],
        name: str = "scripted",
        code: Sequence[ScriptedReply | ModelReply] | None = None,
    ):
        """`code`: the replies for a run that offers run_code, where they differ."""
        self.replies = list(replies)
        self.code = list(code) if code is not None else None
        self.name = name
        self.calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        path = Path(path)
        raw = read_text_file(path, "scripted model file")
        try:
            data = load_yaml(raw)  # YAML is a superset of JSON
        except yaml.YAMLError as e:
            raise HarnessError(f"Scripted model file {path} is not valid JSON or YAML: {e}") from None
        ways = data if isinstance(data, dict) and ("calls" in data or "code" in data) else None
        if ways is not None:
            if set(ways) != {"calls", "code"}:
                raise HarnessError(
                    f"Scripted model file {path} solves its task both ways: it needs `calls: [...]` and "
                    f"`code: [...]` and nothing else, not {', '.join(sorted(ways))}."
                )
            return cls(_replies(ways["calls"], path, "calls"), f"scripted:{path}", _replies(ways["code"], path, "code"))
        if isinstance(data, dict):
            data = data.get("replies")
        return cls(_replies(data, path, "replies"), name=f"scripted:{path}")

    def close(self) -> None:
        """Nothing to free: the replies are in memory."""

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        offers_code = any(t.name == RUN_CODE for t in tools)
        replies = self.code if self.code is not None and offers_code else self.replies
        if self.calls >= len(replies):
            raise PermanentModelError(
                f"The scripted model {self.name} has {len(replies)} replies and the run asked for reply "
                f"{self.calls + 1}. Add replies to the script, or end it with a `submit` call."
            )
        item = replies[self.calls]
        self.calls += 1
        if isinstance(item, ModelReply):
            return item
        return _to_reply(item, self.calls, messages, self.name)


def _replies(data: Any, path: Path, key: str) -> list[ScriptedReply]:
    if not isinstance(data, list) or not data:
        raise HarnessError(
            f"Scripted model file {path} must hold a non-empty list of replies (or `replies: [...]`); "
            f"its `{key}` is not one."
        )
    replies = []
    for i, item in enumerate(data):
        try:
            replies.append(ScriptedReply.model_validate(item))
        except ValidationError as e:
            raise HarnessError(
                describe_validation_error(e, f"Reply {i + 1} of `{key}` in scripted model file {path}")
            ) from None
    return replies


def _to_reply(item: ScriptedReply, index: int, messages: Sequence[Message], name: str) -> ModelReply:
    calls = tuple(
        ToolCall(
            id=c.id or f"call_{index}_{j}",
            name=c.name,
            arguments=c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
        )
        for j, c in enumerate(item.tool_calls)
    )
    message = Message(
        role="assistant",
        text=item.text,
        tool_calls=calls,
        reasoning=Reasoning(text=item.reasoning) if item.reasoning else None,
    )
    usage = item.usage or Usage(
        prompt_tokens=sum(estimate_tokens(m.text) + 4 for m in messages),
        completion_tokens=estimate_tokens(item.text + (item.reasoning or "") + "".join(c.arguments for c in calls)),
        reasoning_tokens=estimate_tokens(item.reasoning or ""),
    )
    finish = item.finish_reason or ("tool_calls" if calls else "stop")
    return ModelReply(message=message, usage=usage, finish_reason=finish, model=name)
