"""Discovery against real MCP server processes: stdio and HTTP, pages, trust, hostile text, bad starts."""

from __future__ import annotations

import time

import pytest
from mcp.types import Tool as McpTool

from agent.dispatch import needs_approval
from core.mcp_settings import McpServer
from core.policy import ApprovalPolicy
from tools.base import Effect, Registry, ToolResult
from tools.builtin import standard_tools
from tools.mcp import with_mcp
from tools.mcp.adapter import SCHEMA_CHARS, adapt, tool_name
from tools.mcp.manager import McpStartError
from tools.mcp.text import DESCRIPTION_CHARS

from .conftest import context, said, stdio

BASIC_TOOLS = {"echo", "write_note", "fail", "hang", "crash", "grow", "picture", "weather", "env_probe"}


def mcp_names(registry: Registry, server: str) -> set[str]:
    return {name.removeprefix(f"{server}__") for name in registry.names() if name.startswith(f"{server}__")}


def test_stdio_discovery_adapts_every_tool(trusted_basic):
    assert mcp_names(trusted_basic, "basic") - {"late"} == BASIC_TOOLS  # `late` appears once a test calls grow
    assert {"shell", "submit"} <= set(trusted_basic.names())  # built-in tools stay
    echo = trusted_basic.get("basic__echo")
    assert echo.schema()["properties"]["text"]["type"] == "string" and echo.schema()["required"] == ["text"]
    assert echo.summary == "(MCP basic) Echo"
    assert '<mcp-untrusted server="basic">\nEcho\nReturn the text unchanged.\n</mcp-untrusted>' in echo.description
    assert 'MCP server "basic" (trusted)' in echo.description


def test_a_trusted_server_read_only_tool_is_read_and_the_rest_write(trusted_basic):
    assert trusted_basic.get("basic__echo").effect is Effect.READ  # readOnlyHint, trusted server
    assert trusted_basic.get("basic__write_note").effect is Effect.WRITE  # no hint: the spec says not read-only
    assert not any(trusted_basic.get(f"basic__{n}").asks_approval for n in BASIC_TOOLS)


def test_http_discovery_of_an_untrusted_server_ignores_its_read_only_hints(http_url):
    with with_mcp([McpServer(name="web", url=http_url)], Registry()) as registry:
        assert mcp_names(registry, "web") == BASIC_TOOLS
        echo = registry.get("web__echo")
        assert echo.effect is Effect.WRITE and echo.asks_approval  # readOnlyHint from an untrusted server
        assert 'MCP server "web" (untrusted)' in echo.description
        result = echo.run(echo.args.model_validate({"text": "over http"}), context())
        assert result.ok and said(result.text, "web") == "over http"


@pytest.mark.parametrize("approve, asks", [("never", (False, False)), ("always", (True, True)), (None, (False, True))])
def test_approve_setting_decides_which_tools_ask(approve, asks):
    spec_read = McpTool(name="r", input_schema={"type": "object"}, annotations={"readOnlyHint": True})
    spec_write = McpTool(name="w", input_schema={"type": "object"})
    server = McpServer(name="s", command="x", trusted=True, approve=approve)
    never = lambda *a: None  # noqa: E731 - these adapted tools are inspected, never run
    assert (adapt(server, spec_read, never).asks_approval, adapt(server, spec_write, never).asks_approval) == (
        asks if approve is not None else (False, False)
    )
    untrusted = McpServer(name="s", command="x", approve=approve)
    assert adapt(untrusted, spec_write, never).asks_approval == (approve != "never")


def test_the_policy_per_tool_rule_still_decides():
    tool = adapt(McpServer(name="s", command="x"), McpTool(name="w", input_schema={"type": "object"}), lambda *a: None)
    assert tool.asks_approval and needs_approval(tool, ApprovalPolicy())
    assert not needs_approval(tool, ApprovalPolicy(per_tool={"s__w": "never"}))
    trusted = adapt(McpServer(name="s", command="x", trusted=True), McpTool(name="w", input_schema={}), lambda *a: None)
    assert not needs_approval(trusted, ApprovalPolicy()) and needs_approval(trusted, ApprovalPolicy(approve="writes"))


def test_pagination_follows_the_cursor_to_the_end():
    with with_mcp([stdio("paged", "paged.py", "25", "4")], Registry()) as registry:
        assert (
            len(registry) == 25 and registry.names()[0] == "paged__tool_000" and "paged__tool_024" in registry.names()
        )
        tool = registry.get("paged__tool_017")
        assert said(tool.run(tool.args.model_validate({"x": 3}), context()).text, "paged") == "tool_017 got {'x': 3}"
        refused = tool.run(tool.args.model_validate({"x": -1}), context())
        assert (
            not refused.ok
            and refused.text == "MCP server paged refused the call (error -32602): x must not be negative"
        )


def test_a_hostile_description_is_cleaned_capped_fenced_and_clashing_names_reported():
    with with_mcp([stdio("hostile", "hostile.py")], standard_tools()) as registry:
        weather = registry.get("hostile__weather")
        text = weather.description
        assert len(text) < DESCRIPTION_CHARS + 300 and "cut from" in text  # was about 100 KB
        assert text.count("<mcp-untrusted") == 1 and text.count("</mcp-untrusted>") == 1
        assert text.index("IMPORTANT SYSTEM NOTICE") > text.index('<mcp-untrusted server="hostile">')
        assert not any(c in text for c in "\u200b\u202e\U000e0041\x1b\x07\x00")
        assert len(weather.summary) <= 140 and "\n" not in weather.summary
        assert weather.effect is Effect.WRITE and weather.asks_approval
        # "a.b" and "a_b" both become hostile__a_b: the first listed keeps it, the clash is reported
        assert registry.get("hostile__a_b").schema() is not None
        assert any("'hostile__a_b', which another of its tools already uses" in p for p in registry.mcp.problems)


def test_names_are_namespaced_and_fit_providers():
    assert tool_name("fs", "read.file/v2") == "fs__read_file_v2"
    assert len(tool_name("fs", "x" * 100)) == 64


def test_a_server_timeout_overrides_the_policy_one():
    spec = McpTool(name="t", input_schema={"type": "object"})
    said = lambda name, arguments, timeout_s, answers, host: ToolResult(f"{name} {arguments} {timeout_s}")  # noqa: E731
    for server, expected in [
        (McpServer(name="s", command="x", timeout_s=2), "t {'a': 1} 2.0"),
        (McpServer(name="s", command="x"), "t {'a': 1} 7.0"),
    ]:
        tool = adapt(server, spec, said)
        assert tool.run(tool.args.model_validate({"a": 1}), context(7.0)).text == expected


def test_an_oversized_input_schema_is_refused():
    spec = McpTool(
        name="big", input_schema={"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(2000)}}
    )
    with pytest.raises(ValueError, match=f"limit {SCHEMA_CHARS:,}"):
        adapt(McpServer(name="s", command="x"), spec, lambda *a: None)


def test_a_server_that_does_not_start_is_named_with_its_last_words(tmp_path):
    marker = tmp_path / "started"
    marker.write_text("already")
    start = time.monotonic()
    with pytest.raises(McpStartError) as caught:
        with with_mcp([stdio("once", "basic.py", "--once", str(marker))], Registry()):
            pass
    message = str(caught.value)
    assert "MCP server once" in message and "did not start" in message
    assert "refusing to start a second time" in message and time.monotonic() - start < 20


def test_a_missing_command_is_a_clear_error():
    with pytest.raises(McpStartError, match="did not start: .*No such file"):
        with with_mcp([McpServer(name="nope", command="/no/such/server")], Registry()):
            pass


def test_an_http_server_nobody_serves_is_a_clear_error():
    from .conftest import free_port

    server = McpServer(name="down", url=f"http://127.0.0.1:{free_port()}/mcp", connect_timeout_s=5)
    with pytest.raises(McpStartError, match="MCP server down .* did not start"):
        with with_mcp([server], Registry()):
            pass


def test_a_server_that_never_answers_gives_up_after_its_connect_timeout():
    # reads requests and never answers; it leaves when its stdin closes
    silent = McpServer(name="silent", command="sh", args=["-c", "cat > /dev/null"], connect_timeout_s=1)
    start = time.monotonic()
    with pytest.raises(McpStartError, match="MCP server silent .* did not start: no answer within 1 s"):
        with with_mcp([silent], Registry()):
            pass
    assert time.monotonic() - start < 10


def test_a_destructive_hint_tightens_the_rules_and_never_loosens_them():
    destructive = McpTool(name="d", input_schema={}, annotations={"destructiveHint": True})
    gentle = McpTool(name="g", input_schema={}, annotations={"destructiveHint": False})
    trusted = McpServer(name="s", command="x", trusted=True)
    assert adapt(trusted, destructive, lambda *a: None).asks_approval  # trusted writes pass unless destructive
    assert not adapt(trusted, gentle, lambda *a: None).asks_approval
    said_never = McpServer(name="s", command="x", trusted=True, approve="never")
    assert not adapt(said_never, destructive, lambda *a: None).asks_approval  # the user's own setting wins
    untrusted = McpServer(name="s", command="x")
    assert adapt(untrusted, gentle, lambda *a: None).asks_approval  # an untrusted hint loosens nothing
