"""The retry policy for model calls: transient errors back off and try again, permanent ones pass through."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from core.errors import TransientModelError

log = logging.getLogger("harness")
T = TypeVar("T")


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
