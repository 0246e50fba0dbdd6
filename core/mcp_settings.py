"""MCP server settings: the `mcp` list of a policy file, or servers named on the command line.

A server is either a stdio command or a Streamable HTTP URL. Servers are
untrusted unless marked `trusted`: then every tool they offer is a write tool,
write tools ask for approval (`approve` says otherwise, explicitly), and their
results reach the model defused and fenced, as their tool descriptions do.
Nothing secret needs to live here: a stdio child gets only the variables named
in `env` and `env_pass` (plus the SDK's HOME, LOGNAME, PATH, SHELL, TERM,
USER), and header values may name host variables as `${NAME}`, read when the
connection opens, so the run record never holds the secret itself.
"""

from __future__ import annotations

import shlex
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

SERVER_NAME = r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$"  # no "__": it separates server and tool in names
# MCP tools a run offers over all its servers (the policy's `mcp_max_tools`): with the built-in
# ones this stays under the 128 tools OpenAI accepts in a request, and every tool costs tokens.
MAX_TOOLS = 100


class McpOAuth(BaseModel):
    """OAuth 2.1 for a Streamable HTTP server, through the MCP SDK's client auth. No secret lives here:
    a client secret or signing key is named by the host variable that holds it, and tokens stay in the
    connection's memory, never in the run record or a prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grant: Literal["authorization_code", "client_credentials", "private_key_jwt"] = Field(
        "authorization_code",
        description="authorization_code: a person authorises (PKCE); client_credentials and private_key_jwt: "
        "the client authenticates itself, no person involved",
    )
    client_id: str | None = Field(
        None, description="a pre-registered client; none: dynamic client registration (or client_metadata_url)"
    )
    client_secret_env: str | None = Field(None, description="the host variable holding the client's secret")
    private_key_env: str | None = Field(
        None, description="private_key_jwt: the host variable holding the client's PEM signing key"
    )
    signing_algorithm: str = Field("ES256", description="private_key_jwt: the JWT signing algorithm")
    scope: str | None = Field(None, description="scopes to ask for; none: what the server says it needs")
    client_name: str = Field("harness", description="the name dynamic client registration gives")
    client_metadata_url: str | None = Field(
        None, description="an https URL of a client metadata document, used as client_id where the server supports it"
    )
    authorize: Literal["browser", "fetch"] = Field(
        "browser",
        description="authorization_code: browser prints the authorization URL (and opens a browser) and waits for "
        "the redirect on a loopback port; fetch requests the URL itself and reads the code from the redirect, for "
        "authorization servers that approve without a person",
    )
    redirect_port: int = Field(33418, ge=1, le=65535, description="the loopback port the redirect comes back to")


class McpServer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=SERVER_NAME, max_length=32, description="prefix of its tools' names: NAME__tool")
    # stdio
    command: str | None = Field(None, description="stdio server: the program to start")
    args: list[str] = Field(default_factory=list, description="stdio server: its arguments")
    cwd: str | None = Field(None, description="stdio server: the folder it starts in")
    env: dict[str, str] = Field(default_factory=dict, description="set in the child as written (recorded in run.json)")
    env_pass: list[str] = Field(
        default_factory=list, description="host variables copied into the child: pass secrets so"
    )
    # Streamable HTTP
    url: str | None = Field(None, description="Streamable HTTP server: its http:// or https:// address")
    headers: dict[str, str] = Field(default_factory=dict, description="values may name host variables as ${NAME}")
    oauth: McpOAuth | None = Field(None, description="Streamable HTTP server: OAuth 2.1 authorisation")
    protocol: Literal["auto", "legacy"] = Field(
        "auto",
        description="auto negotiates the newest protocol both sides speak; legacy forces the initialize "
        "handshake, for servers that mishandle the newer discovery request",
    )
    # trust and limits
    trusted: bool = Field(
        False,
        description="only a trusted server's readOnlyHint makes a tool a read tool "
        "(every other tool is a write tool); a trusted server's writes need no approval by default, "
        "and its results are shown as written, not fenced as untrusted text",
    )
    approve: Literal["writes", "never", "always"] | None = Field(
        None, description='which of its tools ask for approval; default "writes" when untrusted, "never" when trusted'
    )
    sampling: bool = Field(
        False,
        description="answer its sampling requests with the run's model (billed to the run); off: refused, "
        "and the server is told why",
    )
    timeout_s: float | None = Field(None, gt=0, description="per call; default the policy's tool_timeout_s")
    connect_timeout_s: float = Field(30.0, gt=0, description="start, handshake and listing the tools")
    reconnects: int = Field(1, ge=0, description="how many times a crashed server is restarted")
    max_tools: int | None = Field(
        None,
        ge=1,
        description="offer at most this many of its tools, the first it lists; the policy's mcp_max_tools "
        "caps all servers together",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of `command` (stdio) or `url` (HTTP)")
        if self.oauth is not None and self.url is None:
            raise ValueError(f"MCP server {self.name!r}: oauth is for Streamable HTTP servers (`url`), not stdio ones")
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
