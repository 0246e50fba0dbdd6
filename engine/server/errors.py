"""API errors and their two wire shapes.

OpenAI:    {"error": {"message", "type", "param", "code"}}
Anthropic: {"type": "error", "error": {"type", "message"}}

Every failure a handler meets becomes an `APIError` with an HTTP status; the app
renders it in the shape of the API the request was made to.
"""

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from engine.errors import (
    ContextLengthError,
    EngineError,
    EngineStoppedError,
    InvalidRequestError,
)

# HTTP status -> Anthropic error type
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


class APIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


def openai_body(err: APIError) -> dict:
    kind = "invalid_request_error" if err.status < 500 else "server_error"
    return {"error": {"message": err.message, "type": kind, "param": err.param, "code": err.code}}


def anthropic_body(err: APIError) -> dict:
    kind = _ANTHROPIC_TYPES.get(err.status, "invalid_request_error" if err.status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": err.message}}


def from_validation(err: ValidationError, what: str = "request body") -> APIError:
    """One readable line per problem (at most three), naming the field."""
    problems = []
    for e in err.errors()[:3]:
        where = ".".join(str(p) for p in e["loc"])
        problems.append(f"{where}: {e['msg']}" if where else e["msg"])
    more = f" (and {err.error_count() - 3} more)" if err.error_count() > 3 else ""
    first = err.errors()[0]["loc"] if err.error_count() else ()
    return APIError(400, f"invalid {what}: " + "; ".join(problems) + more, param=".".join(map(str, first)) or None)


M = TypeVar("M", bound=BaseModel)


def validated(schema: type[M], raw: bytes) -> M:
    """A request body parsed as `schema`, or the 400 that says what is wrong with it."""
    try:
        return schema.model_validate_json(raw)
    except ValidationError as e:
        raise from_validation(e) from None


def from_engine(err: EngineError) -> APIError:
    if isinstance(err, ContextLengthError):
        return APIError(400, str(err), param="messages", code="context_length_exceeded")
    if isinstance(err, InvalidRequestError):
        return APIError(400, str(err), param=err.param)
    if isinstance(err, EngineStoppedError):
        return APIError(503, str(err))
    return APIError(500, f"engine error: {err}")
