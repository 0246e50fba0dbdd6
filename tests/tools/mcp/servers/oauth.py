"""A Streamable HTTP MCP server behind OAuth 2.1: the Python SDK's server auth, its authorization server
on the same loopback origin (dynamic registration, PKCE, approval without a person).

    python oauth.py PORT TOKENS_FILE

Every token it issues (and every authorization code) is appended to TOKENS_FILE, so a test can look for
them wherever they must not be.
"""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl

PORT, TOKENS = int(sys.argv[1]), Path(sys.argv[2])
BASE = f"http://127.0.0.1:{PORT}"


def issued(secret: str) -> str:
    with TOKENS.open("a") as f:
        f.write(secret + "\n")
    return secret


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=issued(f"code_{secrets.token_hex(16)}"),
            client_id=client.client_id,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        access = issued(f"access_{secrets.token_hex(16)}")
        refresh = issued(f"refresh_{secrets.token_hex(16)}")
        self.tokens[access] = AccessToken(
            token=access,
            client_id=authorization_code.client_id,
            scopes=authorization_code.scopes,
            expires_at=int(time.time()) + 3600,
            resource=authorization_code.resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=authorization_code.client_id, scopes=authorization_code.scopes
        )
        return OAuthToken(
            access_token=access,
            refresh_token=refresh,
            token_type="Bearer",
            expires_in=3600,
            scope=" ".join(authorization_code.scopes),
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise NotImplementedError

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)


server = MCPServer(
    "guarded",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(BASE),
        resource_server_url=AnyHttpUrl(f"{BASE}/mcp"),
        required_scopes=["mcp"],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
    ),
)


@server.tool()
def vault(key: str) -> str:
    """Read a value from the guarded vault."""
    return f"vault[{key}] = 42"


@server.resource("vault://notes")
def notes() -> str:
    """The vault's notes."""
    return "The vault opens only to authorised clients."


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT, streamable_http_path="/mcp")
