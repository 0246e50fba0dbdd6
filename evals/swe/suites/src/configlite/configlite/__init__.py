"""A small INI-style configuration reader with typed access."""

from configlite.errors import ConfigError, MissingKey, ParseError
from configlite.parser import parse
from configlite.config import Config

__all__ = ["Config", "ConfigError", "MissingKey", "ParseError", "parse", "load"]
__version__ = "0.9.3"


def load(path) -> Config:
    with open(path, encoding="utf-8") as f:
        return Config(parse(f.read()))
