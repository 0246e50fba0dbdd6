"""The digest of a request as the harness built it: the rendered messages and the tools shown.

Journaled with every model reply, so a replay can check byte for byte that the harness
still builds the same prompt from the same history, without storing every prompt.

The digest chains one hash per message, so a run's digester hashes only the messages that
are new since its previous prompt: the loop keeps unchanged messages as the same objects, and
a step costs its new messages, not the whole history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from core.types import Message
from memory.tokens import shared_prefix
from tools.base import Tool


def _sha(data: str | bytes) -> bytes:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).digest()


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class PromptDigest:
    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._chain: list[bytes] = [b""]  # _chain[i]: the hash of the first i messages
        self._tools: tuple[list[Tool], bytes] | None = None

    def __call__(self, messages: Sequence[Message], tools: Sequence[Tool]) -> str:
        same = shared_prefix(self._messages, list(messages))
        del self._messages[same:], self._chain[same + 1 :]
        for m in messages[same:]:
            self._messages.append(m)
            self._chain.append(_sha(self._chain[-1] + _sha(_json(m.model_dump(mode="json")))))
        return hashlib.sha256(self._chain[-1] + self._tools_hash(tools)).hexdigest()

    def _tools_hash(self, tools: Sequence[Tool]) -> bytes:
        if self._tools is None or self._tools[0] != list(tools):
            schemas = [{"name": t.name, "description": t.description, "schema": t.schema()} for t in tools]
            self._tools = (list(tools), _sha(_json(schemas)))
        return self._tools[1]


def prompt_digest(messages: Sequence[Message], tools: Sequence[Tool]) -> str:
    """The digest of one prompt on its own (the same value a run's PromptDigest gives)."""
    return PromptDigest()(messages, tools)
