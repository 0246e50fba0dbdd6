"""YAML and TOML of any content read as data UTF-8 can hold, or as the parser's own error (with its line), which every
reader of a user's file turns into a clear message: never a ValueError, KeyError or RecursionError from inside."""

from __future__ import annotations

import contextlib
import tomllib

import pytest
import yaml
from hypothesis import given, settings

from core.data_files import load_toml, load_yaml
from tests.core.data_texts import toml_texts, yaml_texts

WORDS = ["a", "b", "name", "prompt"]


def strings(data, seen: set[int] | None = None) -> list[str]:
    """Every string in `data`, each container once (an alias can make a list that holds itself)."""
    seen = set() if seen is None else seen
    if isinstance(data, str):
        return [data]
    if id(data) in seen or not isinstance(data, (dict, list, tuple, set)):
        return []
    seen.add(id(data))
    items = [x for pair in data.items() for x in pair] if isinstance(data, dict) else list(data)
    return [s for item in items for s in strings(item, seen)]


@settings(max_examples=300, deadline=None)
@given(yaml_texts(WORDS))
def test_any_yaml_is_data_or_a_yaml_error(text):
    try:
        data = load_yaml(text)
    except yaml.YAMLError:
        return
    for s in strings(data):
        s.encode()


@settings(max_examples=300, deadline=None)
@given(toml_texts(WORDS))
def test_any_toml_is_data_or_a_toml_error(text):
    with contextlib.suppress(tomllib.TOMLDecodeError):
        load_toml(text)


@pytest.mark.parametrize(
    "text, said",
    [
        ("a: 2001-02-30", "cannot read this !!timestamp value (day is out of range for month)"),
        ("a: !!int x", "cannot read this !!int value"),
        ("a: !!bool maybe", "cannot read this !!bool value"),
        ('a: "\\ud800"', "\\ud800 is half of a UTF-16 pair, not a character; write the character itself"),
        ("[" * 1000, "it is nested too deeply to read"),
    ],
)
def test_what_a_value_yaml_cannot_build_is_said_at_its_line(text, said):
    with pytest.raises(yaml.YAMLError) as e:
        load_yaml(f"\n{text}")
    assert said in str(e.value)
    if "nested" not in said:
        assert "line 2" in str(e.value)
