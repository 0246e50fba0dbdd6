"""MCP servers from the command line and config files, and what a server's child process and
connection are given. The settings themselves are a policy value: core.mcp_settings."""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import ValidationError

from core.data_files import load_toml, load_yaml
from core.errors import describe_validation_error
from core.mcp_settings import SERVER_NAME, McpServer
from core.text_files import read_text_file

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts")


def host_env(server: McpServer, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's own variables: `env` as written, plus the allowed host ones that are set."""
    source = os.environ if environ is None else environ
    passed = {name: source[name] for name in server.env_pass if name in source}
    return {**passed, **server.env}


def expand_headers(server: McpServer, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        if match.group(1) not in source:
            raise ValueError(f"MCP server {server.name!r}: a header names ${{{match.group(1)}}}, which is not set")
        return source[match.group(1)]

    return {key: _VARIABLE.sub(value, text) for key, text in server.headers.items()}


def from_command(text: str, taken: Set[str] = frozenset()) -> McpServer:
    """`[NAME=]COMMAND ARGS...` as typed after --mcp; the name defaults to the script's or command's stem."""
    name, rest = _split_name(text)
    words = shlex.split(rest)
    if not words:
        raise ValueError(f"--mcp {text!r}: give the command that starts the server")
    if name is None:
        name = _unique(_plain(_what_runs(words)), taken)
    return _server(f"--mcp {text!r}", name=name, command=words[0], args=words[1:])


def _what_runs(words: list[str]) -> str:
    """The script, module or package a command starts: `python srv.py`, `python -m pkg.srv`, `npx -y @org/srv`."""
    target = Path(next((w for w in words[1:] if not w.startswith("-")), words[0])).name
    if target.endswith(_SCRIPT_SUFFIXES):
        return Path(target).stem
    return target.rsplit(".", 1)[-1]


def from_url(text: str, taken: Set[str] = frozenset()) -> McpServer:
    """`[NAME=]URL` as typed after --mcp-url; the name defaults to the host's first label."""
    name, url = _split_name(text)
    if name is None:
        name = _unique(_plain((urlsplit(url).hostname or "http").split(".")[0]), taken)
    return _server(f"--mcp-url {text!r}", name=name, url=url)


def _server(what: str, **settings: Any) -> McpServer:
    try:
        return McpServer.model_validate(settings)
    except ValidationError as e:
        raise ValueError(describe_validation_error(e, what)) from None


def _split_name(text: str) -> tuple[str | None, str]:
    head, sep, rest = text.partition("=")
    if sep and re.fullmatch(SERVER_NAME, head) and " " not in head and "/" not in head and ":" not in head:
        return head, rest.strip()
    return None, text.strip()


def _plain(word: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", word).strip("_")[:24].strip("_")
    return name or "mcp"


def _unique(name: str, taken: Set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def load_servers(path: str | Path) -> list[McpServer]:
    """The `mcp` list of a TOML/YAML/JSON file (a policy file, or one holding only `mcp`)."""
    path = Path(path)
    raw = read_text_file(path, "MCP config file")
    try:
        data: Any = load_toml(raw) if path.suffix == ".toml" else load_yaml(raw)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"MCP config file {path} is not valid {path.suffix[1:].upper() or 'YAML'}: {e}") from None
    entries = data.get("mcp", []) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ValueError(f"MCP config file {path}: `mcp` must be a list of servers.")
    servers = []
    for number, entry in enumerate(entries, 1):
        try:
            servers.append(McpServer.model_validate(entry))
        except ValidationError as e:
            raise ValueError(describe_validation_error(e, f"MCP config file {path}, server {number}")) from None
    return servers


def gather(commands: list[str], urls: list[str], files: list[str], known: Sequence[McpServer] = ()) -> list[McpServer]:
    """Servers from the command line added to `known` ones; every name must be unique."""
    servers = list(known)
    for file in files:
        servers += load_servers(file)
    for command in commands:
        servers.append(from_command(command, {s.name for s in servers}))
    for url in urls:
        servers.append(from_url(url, {s.name for s in servers}))
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise ValueError(
                f"Two MCP servers are named {server.name!r}; give one another name (NAME=... on the command line)."
            )
        seen.add(server.name)
    return servers
