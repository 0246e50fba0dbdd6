"""OAuth 2.1 for a Streamable HTTP MCP server, through the SDK's client auth (an `httpx2.Auth`).

The SDK does discovery (protected-resource and authorization-server metadata),
dynamic client registration or a client metadata document, PKCE, the token
request and refresh. What is ours: where secrets come from (host variables the
settings name, read when the connection opens), where tokens live (this
connection's memory: never the run record, a log line or a prompt), and how the
authorization code comes back: on a loopback port from a person's browser, or,
for authorization servers that approve without a person, read straight from the
redirect of the authorization URL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import webbrowser
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from core.mcp_settings import McpOAuth, McpServer

log = logging.getLogger("harness.mcp")
WAIT_FOR_PERSON_S = 300.0  # how long a browser authorisation may take
_PAGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nAuthorised: the harness goes on; you may close this window.\n"


class MemoryTokens:
    """The SDK's TokenStorage, in this connection's memory: a restarted server keeps its tokens, a new process asks again."""

    def __init__(self, client: OAuthClientInformationFull | None = None):
        self._tokens: OAuthToken | None = None
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


def oauth_for(server: McpServer, report: Callable[[str], None]) -> httpx2.Auth | None:
    """The auth to put on the server's HTTP client; None when the server needs none. Raises ValueError for a
    setting that cannot work (a named variable that is not set)."""
    settings = server.oauth
    if settings is None:
        return None
    assert server.url is not None  # McpServer allows oauth only with a url
    secret = _variable(server, settings.client_secret_env)
    if settings.grant == "client_credentials":
        if settings.client_id is None or secret is None:
            raise ValueError(f"MCP server {server.name!r}: client_credentials needs client_id and client_secret_env")
        return ClientCredentialsOAuthProvider(
            server_url=server.url,
            storage=MemoryTokens(),
            client_id=settings.client_id,
            client_secret=secret,
            scope=settings.scope,
        )
    if settings.grant == "private_key_jwt":
        key = _variable(server, settings.private_key_env)
        if settings.client_id is None or key is None:
            raise ValueError(f"MCP server {server.name!r}: private_key_jwt needs client_id and private_key_env")
        signer = SignedJWTParameters(
            issuer=settings.client_id,
            subject=settings.client_id,
            signing_algorithm=settings.signing_algorithm,
            signing_key=key,
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=server.url,
            storage=MemoryTokens(),
            client_id=settings.client_id,
            assertion_provider=signer.create_assertion_provider(),
            scope=settings.scope,
        )
    redirect = f"http://127.0.0.1:{settings.redirect_port}/callback"
    known = None
    if settings.client_id is not None:  # pre-registered: no dynamic registration
        known = OAuthClientInformationFull(
            client_id=settings.client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    code = _Fetched() if settings.authorize == "fetch" else _Browser(server.name, settings, report)
    return OAuthClientProvider(
        server_url=server.url,
        client_metadata=OAuthClientMetadata(
            client_name=settings.client_name,
            redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=settings.scope,
        ),
        storage=MemoryTokens(known),
        redirect_handler=code.redirect,
        callback_handler=code.callback,
        client_metadata_url=settings.client_metadata_url,
    )


def _variable(server: McpServer, name: str | None) -> str | None:
    if name is None:
        return None
    if name not in os.environ:
        raise ValueError(f"MCP server {server.name!r}: its oauth settings name ${name}, which is not set")
    return os.environ[name]


def _code_from(location: str) -> AuthorizationCodeResult:
    query = parse_qs(urlsplit(location).query)
    if "code" not in query:
        error = query.get("error_description", query.get("error", ["no code"]))[0]
        raise RuntimeError(f"the authorization server gave no code: {error[:200]}")
    return AuthorizationCodeResult(
        code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
    )


class _Fetched:
    """The authorization URL requested by the harness itself; the code read from its redirect."""

    def __init__(self) -> None:
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        async with httpx2.AsyncClient(timeout=30.0) as http:
            answer = await http.get(url, follow_redirects=False)
        location = answer.headers.get("location")
        if answer.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(
                f"the authorization URL answered {answer.status_code} without a redirect; it needs a person: "
                'set authorize = "browser"'
            )
        self._result = _code_from(location)

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("no authorization code came back")
        return result


class _Browser:
    """A person authorises in a browser; the redirect comes back to a one-shot listener on the loopback port."""

    def __init__(self, server: str, settings: McpOAuth, report: Callable[[str], None]):
        self.server, self.settings, self.report = server, settings, report
        self._code: asyncio.Future[AuthorizationCodeResult] | None = None
        self._listener: asyncio.Server | None = None

    async def redirect(self, url: str) -> None:
        self._code = asyncio.get_running_loop().create_future()
        self._listener = await asyncio.start_server(self._on_request, "127.0.0.1", self.settings.redirect_port)
        # A person must act: said on the log (stderr) whatever the command prints, the URL whole.
        log.warning("MCP server %s needs authorisation: open this URL in a browser: %s", self.server, url)
        webbrowser.open(url)

    async def _on_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            target = (await reader.readline()).decode("latin-1").split(" ")[1]
            if urlsplit(target).path == "/callback" and self._code is not None and not self._code.done():
                try:
                    self._code.set_result(_code_from(target))
                except RuntimeError as e:
                    self._code.set_exception(e)
            writer.write(_PAGE)
            await writer.drain()
        except (IndexError, OSError):
            pass
        finally:
            writer.close()

    async def callback(self) -> AuthorizationCodeResult:
        assert self._code is not None  # the SDK calls redirect first
        try:
            return await asyncio.wait_for(self._code, WAIT_FOR_PERSON_S)
        except TimeoutError:
            raise RuntimeError(f"nobody authorised within {WAIT_FOR_PERSON_S:g} s") from None
        finally:
            if self._listener is not None:
                self._listener.close()
