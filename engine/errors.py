"""Errors the engine raises. Every one says what went wrong and what to do about it.

They all derive from `EngineError`, so a server can catch one type and turn it
into a 4xx/5xx reply while the engine goes on serving other requests.
"""


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class ModelLoadError(EngineError):
    """A model file or directory is missing, corrupt or of an unsupported kind."""


class InvalidRequestError(EngineError):
    """A request cannot be served as given (bad sampling parameters, empty prompt...).
    `param` names the offending field when there is one."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class ContextLengthError(InvalidRequestError):
    """The prompt (`tokens` long) does not fit the model's context window (`limit` tokens)."""

    def __init__(self, message: str, tokens: int, limit: int):
        super().__init__(message)
        self.tokens = tokens
        self.limit = limit


class EngineStoppedError(EngineError):
    """The engine was shut down, or its loop failed, before the request finished."""
