"""The harness as the client of @modelcontextprotocol/conformance's client scenarios.

The suite starts a mock server per scenario and runs `client.py URL` with the
scenario's name in MCP_CONFORMANCE_SCENARIO (and, for some, settings in
MCP_CONFORMANCE_CONTEXT); it judges what reached the server. Everything MCP here
is the harness's own host: a server setting (URL, protocol, OAuth), the
connection manager that discovers and calls tools, and the answers the host
gives a server's requests for input. This file only says, per scenario, which
setting a user would write and which tools a model would call.

    scripts/npm/node_modules/.bin/node scripts/npm/node_modules/.bin/conformance client \\
        --command ".venv/bin/python tests/tools/mcp/conformance/client.py" --suite all
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from core.mcp_settings import McpOAuth, McpServer  # noqa: E402
from tools.base import FreeArgs, Registry, ToolContext  # noqa: E402
from tools.mcp import with_mcp  # noqa: E402
from tools.mcp.adapter import tool_name  # noqa: E402

SERVER = "conformance"
MODERN = {"2026-07-28"}
# The pre-registered client the suite's authorization servers accept redirects for.
REDIRECT_PORT = 3000


def context() -> dict[str, Any]:
    return json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")


def server_for(url: str, scenario: str) -> McpServer:
    # On a handshake-era leg the suite's mock servers speak only that lifecycle: the setting a user
    # gives such a server is `legacy`.
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    protocol = "legacy" if version and version not in MODERN else "auto"
    if scenario == "json-schema-ref-no-deref":
        protocol = "legacy"  # its mock speaks only the handshake lifecycle whatever version it reports
    return McpServer(name=SERVER, url=url, protocol=protocol, oauth=oauth_for(scenario), connect_timeout_s=20)


def oauth_for(scenario: str) -> McpOAuth | None:
    if not scenario.startswith("auth/"):
        return None
    given = context()
    if scenario == "auth/client-credentials-basic":
        os.environ["CONFORMANCE_CLIENT_SECRET"] = given["client_secret"]
        return McpOAuth(
            grant="client_credentials", client_id=given["client_id"], client_secret_env="CONFORMANCE_CLIENT_SECRET"
        )
    if scenario == "auth/client-credentials-jwt":
        os.environ["CONFORMANCE_PRIVATE_KEY"] = given["private_key_pem"]
        return McpOAuth(
            grant="private_key_jwt",
            client_id=given["client_id"],
            private_key_env="CONFORMANCE_PRIVATE_KEY",
            signing_algorithm=given.get("signing_algorithm", "ES256"),
        )
    secret_env = None
    if given.get("client_secret"):
        os.environ["CONFORMANCE_CLIENT_SECRET"] = given["client_secret"]
        secret_env = "CONFORMANCE_CLIENT_SECRET"
    return McpOAuth(
        client_id=given.get("client_id"),
        client_secret_env=secret_env,
        client_name="harness-conformance",
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        authorize="fetch",
        redirect_port=REDIRECT_PORT,
    )


def calls_for(scenario: str, registry: Registry) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a model would make in this scenario: (name on the server, arguments)."""
    mine = {name.removeprefix(f"{SERVER}__"): tool for name, tool in registry.tools.items() if "__" in name}
    if scenario in ("tools_call", "request-metadata", "http-standard-headers"):
        return [("add_numbers", {"a": 5, "b": 3})]
    if scenario == "sse-retry":
        return [("test_reconnection", {})]
    if scenario == "elicitation-sep1034-client-defaults":
        return [("test_client_elicitation_defaults", {})]
    if scenario == "json-schema-2020-12-preservation":
        return [("json_schema_echo", {"schema": mine["json_schema_2020_12_tool"].schema()})]
    if scenario == "http-invalid-tool-headers":
        return [(name, stub_arguments(tool.schema())) for name, tool in mine.items()]
    if scenario == "http-custom-headers":
        return [(c["name"], c.get("arguments") or {}) for c in context().get("toolCalls", []) if c["name"] in mine]
    if scenario == "sep-2322-client-request-state":
        return [(n, {}) for n in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state")] + [
            ("test_mrtr_no_result_type", {})
        ]
    if scenario.startswith("auth/") and mine:
        return [(next(iter(mine)), {})]
    return []


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    kinds = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": [], "null": None}
    properties = schema.get("properties", {})
    return {name: kinds.get(properties.get(name, {}).get("type"), "x") for name in schema.get("required", [])}


def main() -> int:
    url, scenario = sys.argv[1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    server = server_for(url, scenario)
    with with_mcp([server], Registry(), elicitation="defaults") as registry:
        # A tool the server does not list is never called, as a model could not call it: said, not failed
        # (some scenarios' servers list none and judge the requests that came before).
        unlisted = []
        for name, arguments in calls_for(scenario, registry):
            tool = registry.get(tool_name(SERVER, name))
            if tool is None:
                unlisted.append(
                    f"{name} is not listed, so not called (listed: {', '.join(registry.names()) or 'none'})"
                )
                continue
            result = tool.run(FreeArgs(**arguments), ToolContext(sandbox=None, timeout_s=20))  # type: ignore[arg-type]
            print(f"{name}: {'ok' if result.ok else 'error'}: {result.text[:300]}", file=sys.stderr)
        for problem in [*getattr(getattr(registry, "mcp", None), "problems", []), *unlisted]:
            print(f"notice: {problem}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
