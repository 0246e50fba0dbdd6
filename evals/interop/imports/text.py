"""Values as other harnesses write them, read plainly: message content as text, ISO times as seconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any


def text_of(content: Any) -> str:
    """A string as it is; a list of content parts (OpenAI, Anthropic, Inspect, ATIF) as its text parts joined
    by newlines, each non-text part (an image, audio) as a placeholder naming its type."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("content"))
                parts.append(text if isinstance(text, str) else f"[{part.get('type', 'content')}]")
        return "\n".join(parts)
    return str(content)


def iso_seconds(value: Any) -> float | None:
    """An ISO-8601 time (a trailing Z included) as Unix seconds, one without a zone read as UTC (as OpenHands
    writes them), never as this machine's local time; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def fields(value: Any) -> dict[str, Any]:
    """An object of the file, or an empty one where the file has something else (or nothing) there."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """A list of the file, or an empty one where the file has something else (or nothing) there."""
    return value if isinstance(value, list) else []


def arguments_text(value: Any) -> str:
    """A call's arguments as the raw string a model sends: kept as written when recorded as one, else JSON."""
    return value if isinstance(value, str) else json.dumps({} if value is None else value)
