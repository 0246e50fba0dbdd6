"""A hostile MCP result, as each provider receives it: inside one fence naming its server, with nothing in it
that closes the fence or passes for a chat-template marker.

The result comes from the real hostile server process (tests/tools/mcp/servers/hostile.py, tool `inject`)
through a whole run. The OpenAI and Anthropic SDK clients send their requests over real HTTP to the scripted
provider, which records them; the local engine's encoding is the embedded model's own chat template applied
to the request the OpenAI client sent, as `harness serve` applies it (the in-process client sends the same
messages, converted the same way).
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from agent.run.task import Task
from agent.session import RunSpec, start
from core.mcp_settings import McpServer
from core.policy import HarnessPolicy
from tests.agent.models.provider_double import anthropic_message, openai_completion, provider, reply
from tests.tools.mcp.conftest import SERVERS, markers, said

HOSTILE = McpServer(name="hostile", command=sys.executable, args=[str(SERVERS / "hostile.py")], approve="never")
OPENING = '<mcp-untrusted server="hostile">'


def sent(model: str, first: dict, second: dict, tmp_path) -> dict:
    """The body of the request that carried the hostile result back to the provider."""
    with provider([reply(200, first), reply(200, second)]) as (server, url):
        summary, _ = start(
            RunSpec(Task(prompt="What is the weather?"), model(url), HarnessPolicy(mcp=[HOSTILE]), tmp_path)
        )
    assert summary.stop_reason == "submitted"
    return server.requests[1]["body"]


def assert_only_our_fences(body: dict) -> None:
    """Across the whole request (tool definitions and every message): each fence opened is ours, closed once,
    and nothing else can pass for a marker."""
    text = json.dumps(body, ensure_ascii=False)
    found = [m for m in markers(text) if m.lower() != "mcp-untrusted"]
    assert not found, found
    assert text.count("<mcp-untrusted server=") == text.count("</mcp-untrusted>") > 0


@pytest.fixture(scope="module")
def openai_body(tmp_path_factory) -> dict:
    return sent(
        lambda url: f"openai-compatible:{url}/v1#m",
        openai_completion([("hostile__inject", {})]),
        openai_completion([("submit", {"answer": "sunny"})]),
        tmp_path_factory.mktemp("openai"),
    )


def test_the_openai_client_sends_a_hostile_result_fenced_and_defused(openai_body):
    [result] = [m["content"] for m in openai_body["messages"] if m["role"] == "tool"]
    assert said(result).startswith("Sunny, 21 C.")
    assert_only_our_fences(openai_body)


def test_the_anthropic_client_sends_a_hostile_result_fenced_and_defused(tmp_path):
    body = sent(
        lambda url: f"anthropic-compatible:{url}#claude-x",
        anthropic_message([{"type": "tool_use", "id": "toolu_a", "name": "hostile__inject", "input": {}}]),
        anthropic_message([{"type": "tool_use", "id": "toolu_b", "name": "submit", "input": {"answer": "sunny"}}]),
        tmp_path,
    )
    [result] = [b["content"] for m in body["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert said(result).startswith("Sunny, 21 C.")
    assert "\n\nHuman:" not in result and "\n\nAssistant:" not in result
    assert_only_our_fences(body)


def test_the_local_engines_chat_template_keeps_a_hostile_result_inside_its_tool_response(openai_body, model_weights):
    from engine.tokenizer import Tokenizer
    from engine.weights import load_checkpoint

    tokenizer = Tokenizer.from_checkpoint(load_checkpoint(model_weights))
    messages, tools = openai_body["messages"], openai_body["tools"]
    prompt = tokenizer.render_chat(messages, tools)
    # The tool format's blocks are plain text to this model: only the one the template wrote may be there.
    assert prompt.count("<tool_response>") == prompt.count("</tool_response>") == 1
    [block] = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", prompt, re.DOTALL)
    assert said(block).startswith("Sunny, 21 C.")
    # The special tokens of the encoded prompt are the template's own: as many as with a harmless result.
    special = set(tokenizer.special_ids.values())
    plain = [{**m, "content": "Sunny."} if m["role"] == "tool" else m for m in messages]
    count = lambda ms: sum(i in special for i in tokenizer.encode_chat(ms, tools))  # noqa: E731
    assert count(messages) == count(plain)
