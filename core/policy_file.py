"""A policy file read: TOML, YAML or JSON, and the fields it sets laid over its preset's."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from core.data_files import load_toml, load_yaml
from core.errors import HarnessError
from core.text_files import read_text_file


def read_policy_file(path: Path) -> dict[str, Any]:
    raw = read_text_file(path, "policy file", "Check the path, or use a preset name.")
    try:
        if path.suffix == ".toml":
            data = load_toml(raw)
        elif path.suffix in (".yaml", ".yml", ".json"):
            data = load_yaml(raw) or {}
        else:
            raise HarnessError(f"Policy file {path} must end in .toml, .yaml, .yml or .json.")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise HarnessError(f"Policy file {path} is not valid {path.suffix[1:].upper()}: {e}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"Policy file {path} must hold a mapping of fields, not a {type(data).__name__}.")
    return data


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
