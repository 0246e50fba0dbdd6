"""YAML and TOML as the harness reads a user's file (a policy, a task, a scripted model, MCP servers, prices, specs).

The parsers raise more than their own errors: PyYAML a ValueError for a date of February 30th or `!!int x`, a
KeyError for `!!bool maybe`, an AttributeError for `!!timestamp 7`, and both a RecursionError for a document nested a few thousand levels deep. Here each of
those is the parser's own error (yaml.YAMLError, with the line; tomllib.TOMLDecodeError), the one every reader
already turns into a clear message.
"""

from __future__ import annotations

import tomllib
from typing import Any

import yaml
from yaml.constructor import ConstructorError

_STANDARD_TAG = "tag:yaml.org,2002:"  # written !! in a document


class SafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader whose values it cannot build are a ConstructorError at the value's line."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as e:  # a constructor that cannot build the value (ValueError, KeyError, AttributeError...)
            tag = node.tag.replace(_STANDARD_TAG, "!!")
            raise ConstructorError(None, None, f"cannot read this {tag} value ({e})", node.start_mark) from None

    def construct_scalar(self, node: yaml.ScalarNode) -> Any:
        value = super().construct_scalar(node)
        try:
            value.encode()
        except UnicodeEncodeError as e:  # a "\\ud800" escape: half of a UTF-16 pair, which no file or journal holds
            at = f"{value[e.start]!r}"[1:-1]
            raise ConstructorError(
                None,
                None,
                f"{at} is half of a UTF-16 pair, not a character; write the character itself",
                node.start_mark,
            ) from None
        return value


def load_yaml(raw: str, loader: type[SafeLoader] = SafeLoader) -> Any:
    try:
        return yaml.load(raw, Loader=loader)
    except RecursionError:
        raise yaml.YAMLError("it is nested too deeply to read") from None


def load_toml(raw: str) -> dict[str, Any]:
    try:
        return tomllib.loads(raw)
    except RecursionError:
        raise tomllib.TOMLDecodeError("it is nested too deeply to read") from None
