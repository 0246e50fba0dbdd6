"""Error kinds the harness distinguishes, and the retry policy for model calls.

`HarnessError` is for the user: its message is one paragraph that says what is
wrong and what to do, and the CLI prints it instead of a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from pydantic import ValidationError
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

log = logging.getLogger("harness")
T = TypeVar("T")


class HarnessError(Exception):
    """A problem the user can fix; the message says what and how."""


class TransientModelError(Exception):
    """Worth retrying: rate limit, 5xx, dropped connection, timeout."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class PermanentModelError(HarnessError):
    """Retrying cannot help: bad request, authentication, unknown model, script exhausted."""


def describe_validation_error(err: ValidationError, what: str) -> str:
    """One paragraph naming each bad field, the problem and the allowed values."""
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "is not a known field"
        parts.append(f"`{where}` {msg} (got {e.get('input')!r})" if e["type"] != "missing" else f"`{where}` is required")
    return f"{what} is invalid: " + "; ".join(parts) + "."


def _wait(multiplier: float, cap: float):
    backoff = wait_exponential_jitter(multiplier=multiplier, max=cap, jitter=multiplier)

    def wait(state) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), cap)
        return backoff(state)

    return wait


def with_retries(fn: Callable[[], T], attempts: int, multiplier_s: float, max_wait_s: float) -> T:
    """Call `fn`, retrying transient model errors with jittered exponential backoff.

    A server's Retry-After wins over the computed backoff. Permanent errors pass
    through at once.
    """
    for attempt in Retrying(
        stop=stop_after_attempt(attempts),
        wait=_wait(multiplier_s, max_wait_s),
        retry=retry_if_exception_type(TransientModelError),
        before_sleep=before_sleep_log(log, logging.WARNING),
        reraise=True,
    ):
        with attempt:
            return fn()
    raise AssertionError("unreachable: tenacity reraises the last error")
