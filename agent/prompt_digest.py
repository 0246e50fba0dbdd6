"""The digest of a request as the harness built it: the rendered messages and the tools shown.

Journaled with every model reply, so a replay can check byte for byte that the harness
still builds the same prompt from the same history, without storing every prompt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from core.types import Message
from tools.base import Tool


def prompt_digest(messages: Sequence[Message], tools: Sequence[Tool]) -> str:
    request = {
        "messages": [m.model_dump(mode="json") for m in messages],
        "tools": [{"name": t.name, "description": t.description, "schema": t.schema()} for t in tools],
    }
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
