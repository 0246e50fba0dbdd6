"""The tools as a program sees them: one Python function per tool, named after it, taking its arguments as
keywords, with its description as docstring (what the runner builds in the sandbox), and the same functions as
the signatures the model reads in run_code's description."""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from typing import Any

from tools.base import Tool

JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}


def python_name(tool_name: str) -> str:
    """A tool's name as a Python identifier (an MCP tool `server__get-item` is `server__get_item`)."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", tool_name)
    if not name or name[0].isdigit():
        name = "_" + name
    return name + "_" if keyword.iskeyword(name) else name


def function_spec(tool: Tool) -> dict[str, Any]:
    """What the runner needs to make the tool's function: its name, the tool it calls, docstring, parameters."""
    schema = tool.schema()
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        param: dict[str, Any] = {"name": name, "required": name in required, "type": type_text(prop)}
        if "default" in prop:
            param["default"] = prop["default"]
        elif name not in required:
            param["default"] = None
        params.append(param)
    params.sort(key=lambda p: not p["required"])  # a signature lists the required ones first
    return {"name": python_name(tool.name), "tool": tool.name, "doc": tool.description, "params": params}


def type_text(prop: dict[str, Any]) -> str:
    """A JSON schema property as a Python annotation, as far as it says one."""
    if "enum" in prop:
        return "Literal[" + ", ".join(repr(v) for v in prop["enum"]) + "]"
    options = prop.get("anyOf") or prop.get("oneOf")
    if options:
        return " | ".join(dict.fromkeys(type_text(o) for o in options))
    kind = prop.get("type")
    if isinstance(kind, list):
        return " | ".join(JSON_TYPES.get(k, "None" if k == "null" else "Any") for k in kind)
    if kind == "null":
        return "None"
    if kind == "array" and isinstance(prop.get("items"), dict) and prop["items"]:
        return f"list[{type_text(prop['items'])}]"
    return JSON_TYPES.get(kind, "Any") if isinstance(kind, str) else "Any"


def signature(spec: dict[str, Any]) -> str:
    """`read_file(*, path: str, start_line: int = 1) -> str`."""
    parts = []
    for p in spec["params"]:
        default = "" if p["required"] else f" = {p['default']!r}"
        parts.append(f"{p['name']}: {p['type']}{default}")
    return f"{spec['name']}({', '.join(['*', *parts]) if parts else ''}) -> str"


def function_specs(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Every tool's function; two tools whose names become the same identifier get a number to tell them apart."""
    specs, taken = [], set()
    for tool in tools:
        spec = function_spec(tool)
        name, n = spec["name"], 2
        while spec["name"] in taken:
            spec["name"], n = f"{name}_{n}", n + 1
        taken.add(spec["name"])
        specs.append(spec)
    return specs


def api_text(tools: Sequence[Tool]) -> str:
    """One line per function: its signature and the tool's one-line summary."""
    return "\n".join(f"- {signature(s)}: {t.summary}" for s, t in zip(function_specs(tools), tools, strict=True))
