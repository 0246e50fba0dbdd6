"""Error kinds the harness distinguishes.

`HarnessError` is for the user: its message is one paragraph that says what is
wrong and what to do, and the CLI prints it instead of a traceback.
"""

from __future__ import annotations

from pydantic import ValidationError

from core.types import Usage


class HarnessError(Exception):
    """A problem the user can fix; the message says what and how."""


class TransientModelError(Exception):
    """Worth retrying: rate limit, 5xx, dropped connection, timeout. `usage`: what the provider billed
    for the failed call, when its response said (a reply that arrived but could not be read)."""

    def __init__(self, message: str, retry_after: float | None = None, usage: Usage | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.usage = usage


class PermanentModelError(HarnessError):
    """Retrying cannot help: bad request, authentication, unknown model, script exhausted."""


class ContextOverflowError(PermanentModelError):
    """The prompt does not fit the model's context window. `tokens` (the prompt's) and `limit` (the
    window) are set when the provider said them."""

    def __init__(self, message: str, tokens: int | None = None, limit: int | None = None):
        super().__init__(message)
        self.tokens = tokens
        self.limit = limit


def describe_validation_error(err: ValidationError, what: str) -> str:
    """One paragraph naming each bad field, the problem and the allowed values."""
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"]
        if e["type"] == "value_error":  # a check of the model's own, which names what it is about
            said = msg.removeprefix("Value error, ")
            parts.append(said if not e["loc"] else f"`{where}`: {said}")
            continue
        if e["type"] == "extra_forbidden":
            msg = "is not a known field"
        parts.append(
            f"`{where}` {msg} (got {e.get('input')!r})" if e["type"] != "missing" else f"`{where}` is required"
        )
    return f"{what} is invalid: " + "; ".join(parts) + "."
