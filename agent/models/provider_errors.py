"""Provider SDK errors mapped to the harness's two kinds: transient (retried by the
harness's tenacity policy) and permanent (the run stops, with the cause named). A prompt
longer than the model's window is a permanent error of its own, ContextOverflowError.

Both official SDKs raise the same shapes (status errors carrying the HTTP response,
connection errors, timeouts), so one function serves both. A successful status whose
body is not the reply the API promises (an HTML page from a proxy, no `choices`, a
field of the wrong type) is transient too: such bodies come from a gateway or a
server under strain, and the next attempt usually gets a real reply.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from core.errors import ContextOverflowError, PermanentModelError, TransientModelError
from core.policy import ModelParams
from core.types import Usage

# What reading a malformed body raises, in the SDK (JSON decoding) or in our conversion
# (a missing attribute, an empty list, a wrong type; pydantic's ValidationError is a ValueError).
UNREADABLE = (AttributeError, IndexError, KeyError, TypeError, ValueError)

T = TypeVar("T")
R = TypeVar("R")

# Statuses worth retrying: timeout, conflict, rate limit, and the server's own failures.
RETRYABLE = {408, 409, 429}

CAUSES = {
    400: "the request was rejected as invalid",
    401: "authentication failed",
    403: "permission denied",
    404: "not found (check the model name and the base URL)",
    413: "the request is too large",
    422: "the request could not be processed",
}

# Each provider's words for a prompt longer than the window (a 400), naming the prompt's tokens and the limit.
# OpenAI and `harness serve` also give the code `context_length_exceeded`.
OVERFLOW_WORDS = (
    re.compile(r"prompt is too long: (?P<tokens>\d+) tokens > (?P<limit>\d+) maximum"),  # Anthropic
    re.compile(r"exceed context limit: (?P<tokens>\d+) \+ \d+ > (?P<limit>\d+)"),  # Anthropic: prompt + max_tokens
    re.compile(r"prompt has (?P<tokens>\d+) tokens but the context window holds (?P<limit>\d+)"),  # harness serve
    re.compile(  # OpenAI and vLLM; "requested" counts the reply's max tokens too
        r"maximum context length is (?P<limit>\d+) tokens.*?(?:resulted in|requested) (?P<tokens>\d+) tokens", re.S
    ),
    re.compile(r"configured limit of (?P<limit>\d+) tokens.*?resulted in (?P<tokens>\d+) tokens", re.S),  # OpenAI
)


def retry_after(headers) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if headers is None:
        return None
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            pass
        parsed = email.utils.parsedate_tz(value)
        if parsed is not None:
            return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def _api_message(err) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return str(getattr(err, "message", "") or err)


def timeouts(params: ModelParams, timeout_type: Callable[..., T]) -> T:
    """The HTTP timeouts of one call, as the SDK's own `Timeout`: the policy's connect limit,
    and its read limit for everything else."""
    return timeout_type(params.read_timeout_s, connect=params.connect_timeout_s)


def malformed(err: Exception, name: str, usage: Usage | None = None, body: str | None = None) -> TransientModelError:
    """A reply that arrived but is not the shape the API promises; `usage`: what it still says was billed;
    `body`: the reply as it came, of which the message quotes the start."""
    what = problem(err)
    seen = " ".join((body or "").split())
    quoted = f" The reply was: {seen[:400]}{'...' if len(seen) > 400 else ''}" if seen else " The reply was empty."
    return TransientModelError(
        f"{name}: the provider answered, but its reply is malformed: it could not be read as a model reply "
        f"({what}).{quoted if body is not None else ''}",
        usage=usage,
    )


def problem(err: Exception) -> str:
    """What is wrong with a reply, in a few words: the client's own finding, a field's, or the exception's."""
    if isinstance(err, json.JSONDecodeError):
        return f"it is not JSON: {err.msg} at character {err.pos}"
    if isinstance(err, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the reply'}: {e['msg']}" for e in err.errors()[:2])
    what = str(err).splitlines()[0][:300] if str(err) else "no detail"
    return what if isinstance(err, NotAReply) else f"{type(err).__name__}: {what}"


class NotAReply(ValueError):
    """What a client finds wrong in a reply the SDK could read: said as it is, without a Python type."""


def read_reply(
    send: Callable[[], Any],
    to_reply: Callable[[Any, str, float], R],
    usage: Callable[[Any], Usage],
    sdk_error: type[Exception],
    name: str,
    key_env: str,
) -> R:
    """One call through an official SDK: `send` makes the request and returns the raw response (whose body
    is kept for the message when it is malformed); `to_reply` reads the parsed response, given the call's
    latency. An SDK error is mapped to the harness's own; a reply that cannot be read is transient, with
    the usage it still reports (read by `usage`)."""
    start = time.perf_counter()
    raw = response = None
    try:
        raw = send()
        response = raw.parse()
        return to_reply(response, name, time.perf_counter() - start)
    except sdk_error as e:
        raise map_error(e, name, key_env) from e
    except UNREADABLE as e:
        raise malformed(e, name, billed(response, usage), body_of(raw)) from e


def body_of(raw: object) -> str | None:
    """The text of a raw SDK response (`with_raw_response`; an attribute in one SDK, a method in the other),
    or None when there was none."""
    if raw is None:
        return None
    try:
        text = raw.text  # type: ignore[attr-defined]
        return text() if callable(text) else text
    except Exception:  # a body that cannot even be decoded as text
        return None


def billed(response: object, convert: Callable[[Any], Usage]) -> Usage | None:
    """The usage a response that could not be read as a reply still reports: the call was billed all the same.
    None when there is no response, or no usage in it that can be read."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    try:
        return convert(usage)
    except UNREADABLE:
        return None


def map_error(err: Exception, name: str, key_env: str | None = None) -> Exception:
    """The harness error to raise for an SDK error `err` from model `name`."""
    status = getattr(err, "status_code", None)
    response = getattr(err, "response", None)
    if status is None:
        if type(err).__name__ in ("APIConnectionError", "APITimeoutError"):
            what = "timed out" if "Timeout" in type(err).__name__ else "could not connect or the connection dropped"
            return TransientModelError(f"{name}: the request {what}: {err}")
        return PermanentModelError(f"{name}: the provider's response could not be used: {type(err).__name__}: {err}")
    if status < 400:  # the SDK could not validate a successful reply
        return malformed(err, name, body=body_of(response))
    message = _api_message(err)
    if status in RETRYABLE or status >= 500:
        wait = retry_after(getattr(response, "headers", None))
        return TransientModelError(f"{name}: HTTP {status}: {message}", retry_after=wait)
    if status == 400 and (overflow := context_overflow(err, message, name)) is not None:
        return overflow
    cause = CAUSES.get(status, "the request was refused")
    hint = f" Check {key_env}." if status == 401 and key_env else ""
    return PermanentModelError(f"{name}: HTTP {status}, {cause}: {message}.{hint}")


def context_overflow(err: Exception, message: str, name: str) -> ContextOverflowError | None:
    """The error for a 400 that says the prompt is longer than the model's window; None for any other 400."""
    said = next((m for m in (w.search(message) for w in OVERFLOW_WORDS) if m is not None), None)
    if said is None and getattr(err, "code", None) != "context_length_exceeded":
        return None
    tokens, limit = (int(said["tokens"]), int(said["limit"])) if said is not None else (None, None)
    return ContextOverflowError(
        f"{name}: HTTP 400, the prompt is longer than the model's context window: {message.rstrip('.')}.", tokens, limit
    )
