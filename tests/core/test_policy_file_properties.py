"""A policy file of any content is a policy or one HarnessError saying what is wrong, never a traceback."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.presets import PRESETS, load_policy
from tests.core.data_texts import read_or_refused, toml_texts, yaml_texts


def fields(data: Any) -> set[str]:
    """Every field name of a dumped policy, at any depth."""
    if isinstance(data, dict):
        return set(data) | {name for value in data.values() for name in fields(value)}
    if isinstance(data, list):
        return {name for value in data for name in fields(value)}
    return set()


WORDS = sorted(fields(PRESETS["default"].model_dump()) | {"extends", *PRESETS, "always", "writes", "never", "80%"})


def loads(text: str, suffix: str) -> None:
    policy = read_or_refused(text, f"policy{suffix}", lambda path: load_policy(str(path)))
    if policy is not None:
        policy.model_dump_json()  # as run.json and the journal's events hold it


@settings(max_examples=200, deadline=None)
@given(yaml_texts(WORDS), st.sampled_from([".yaml", ".json"]))
def test_any_yaml_policy_file_is_a_policy_or_a_clear_error(text, suffix):
    loads(text, suffix)


@settings(max_examples=200, deadline=None)
@given(toml_texts(WORDS))
def test_any_toml_policy_file_is_a_policy_or_a_clear_error(text):
    loads(text, ".toml")
