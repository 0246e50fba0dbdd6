"""MCP server settings: the `mcp` list of a policy file, or servers named on the command line.

A server is either a stdio command or a Streamable HTTP URL. Servers are
untrusted unless marked `trusted`: then every tool they offer is a write tool,
and write tools ask for approval (`approve` says otherwise, explicitly).
Nothing secret needs to live here: a stdio child gets only the variables named
in `env` and `env_pass` (plus the SDK's HOME, LOGNAME, PATH, SHELL, TERM,
USER), and header values may name host variables as `${NAME}`, read when the
connection opens, so the run record never holds the secret itself.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

SERVER_NAME = r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$"  # no "__": it separates server and tool in names
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts")


class McpServer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=SERVER_NAME, max_length=32, description="prefix of its tools' names: NAME__tool")
    # stdio
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict, description="set in the child as written (recorded in run.json)")
    env_pass: list[str] = Field(default_factory=list, description="host variables copied into the child: pass secrets so")
    # Streamable HTTP
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, description="values may name host variables as ${NAME}")
    # "auto" negotiates the newest protocol both sides speak; "legacy" forces the initialize
    # handshake, for servers that mishandle the newer discovery request
    protocol: Literal["auto", "legacy"] = "auto"
    # trust and limits
    trusted: bool = False
    approve: Literal["writes", "never", "always"] | None = Field(
        None, description='which of its tools ask for approval; default "writes" when untrusted, "never" when trusted'
    )
    timeout_s: float | None = Field(None, gt=0, description="per call; default the policy's tool_timeout_s")
    connect_timeout_s: float = Field(30.0, gt=0, description="start, handshake and listing the tools")
    reconnects: int = Field(1, ge=0, description="how many times a crashed server is restarted")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of `command` (stdio) or `url` (HTTP)")
        if self.url is not None and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError(f"MCP server {self.name!r}: url must start with http:// or https://, not {self.url!r}")
        return self

    @property
    def approval(self) -> Literal["writes", "never", "always"]:
        if self.approve is not None:
            return self.approve
        return "never" if self.trusted else "writes"

    @property
    def where(self) -> str:
        return self.url if self.url is not None else shlex.join([self.command or "", *self.args])


def host_env(server: McpServer, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The child's own variables: `env` as written, plus the allowed host ones that are set."""
    environ = os.environ if environ is None else environ
    passed = {name: environ[name] for name in server.env_pass if name in environ}
    return {**passed, **server.env}


def expand_headers(server: McpServer, environ: dict[str, str] | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        if match.group(1) not in environ:
            raise ValueError(f"MCP server {server.name!r}: a header names ${{{match.group(1)}}}, which is not set")
        return environ[match.group(1)]

    return {key: _VARIABLE.sub(value, text) for key, text in server.headers.items()}


def from_command(text: str, taken: set[str] = frozenset()) -> McpServer:
    """`[NAME=]COMMAND ARGS...` as typed after --mcp; the name defaults to the script's or command's stem."""
    name, rest = _split_name(text)
    words = shlex.split(rest)
    if not words:
        raise ValueError(f"--mcp {text!r}: give the command that starts the server")
    if name is None:
        name = _unique(_plain(_what_runs(words)), taken)
    return McpServer(name=name, command=words[0], args=words[1:])


def _what_runs(words: list[str]) -> str:
    """The script, module or package a command starts: `python srv.py`, `python -m pkg.srv`, `npx -y @org/srv`."""
    target = Path(next((w for w in words[1:] if not w.startswith("-")), words[0])).name
    if target.endswith(_SCRIPT_SUFFIXES):
        return Path(target).stem
    return target.rsplit(".", 1)[-1]


def from_url(text: str, taken: set[str] = frozenset()) -> McpServer:
    """`[NAME=]URL` as typed after --mcp-url; the name defaults to the host's first label."""
    name, url = _split_name(text)
    if name is None:
        name = _unique(_plain((urlsplit(url).hostname or "http").split(".")[0]), taken)
    return McpServer(name=name, url=url)


def _split_name(text: str) -> tuple[str | None, str]:
    head, sep, rest = text.partition("=")
    if sep and re.fullmatch(SERVER_NAME, head) and " " not in head and "/" not in head and ":" not in head:
        return head, rest.strip()
    return None, text.strip()


def _plain(word: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", word).strip("_")[:24].strip("_")
    return name or "mcp"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def load_servers(path: str | Path) -> list[McpServer]:
    """The `mcp` list of a TOML/YAML/JSON file (a policy file, or one holding only `mcp`)."""
    path = Path(path)
    try:
        raw = path.read_text()
    except OSError as e:
        raise ValueError(f"Cannot read MCP config file {path}: {e.strerror}.") from None
    try:
        data: Any = tomllib.loads(raw) if path.suffix == ".toml" else yaml.safe_load(raw)
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
            problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
                                 for err in e.errors())
            raise ValueError(f"MCP config file {path}, server {number}: {problems}") from None
    return servers


def gather(commands: list[str], urls: list[str], files: list[str], known: list[McpServer] = ()) -> list[McpServer]:
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
            raise ValueError(f"Two MCP servers are named {server.name!r}; "
                             "give one another name (NAME=... on the command line).")
        seen.add(server.name)
    return servers
