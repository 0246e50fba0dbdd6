"""What the provider clients send and keep, checked on the wire against the scripted HTTP
provider (a real loopback server standing in for Anthropic and OpenAI)."""

from __future__ import annotations

from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy, ModelParams, step_params
from tests.agent.helpers import events
from tests.agent.models.provider_double import anthropic_message, openai_completion, provider, reply

THINKING = {"type": "thinking", "thinking": "I should look first.", "signature": "c2lnbmVkLWJ5LWFudGhyb3BpYw=="}
REDACTED = {"type": "redacted_thinking", "data": "ZW5jcnlwdGVkLXJlYXNvbmluZw=="}


def test_anthropic_thinking_blocks_go_back_verbatim_and_cache_breakpoints_are_placed(tmp_path):
    first = anthropic_message(
        [
            THINKING,
            REDACTED,
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_a", "name": "shell", "input": {"command": "echo hi"}},
        ]
    )
    second = anthropic_message([{"type": "tool_use", "id": "toolu_b", "name": "submit", "input": {"answer": "hi"}}])
    policy = HarnessPolicy(
        model=ModelParams(cache_breakpoints=["tools", "system", "last_message"], temperature=0.3, max_tokens=77)
    )
    with provider([reply(200, first), reply(200, second)]) as (server, url):
        summary, run_dir = start(
            RunSpec(Task(prompt="say hi"), f"anthropic-compatible:{url}#claude-x", policy, tmp_path)
        )
    assert summary.stop_reason == "submitted"
    one, two = (r["body"] for r in server.requests)
    assert one["model"] == "claude-x" and one["max_tokens"] == 77 and one["temperature"] == 0.3
    mark = {"type": "ephemeral", "ttl": "5m"}
    assert one["tools"][-1]["cache_control"] == mark and all("cache_control" not in t for t in one["tools"][:-1])
    assert one["system"][-1]["cache_control"] == mark
    assert one["messages"][-1]["content"][-1]["cache_control"] == mark
    assistant = two["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"][:2] == [THINKING, REDACTED]
    assert assistant["content"][3] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "shell",
        "input": {"command": "echo hi"},
    }
    result = two["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_a" and "hi" in result["content"]
    replied = [e for e in events(run_dir) if e["type"] == "model_replied"]
    reasoning = replied[0]["reply"]["message"]["reasoning"]
    assert reasoning["provider"] == "anthropic" and reasoning["payload"] == [THINKING, REDACTED]
    usage = replied[0]["reply"]["usage"]
    assert usage == {
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "cached_tokens": 70,
        "cache_write_tokens": 10,
        "reasoning_tokens": 0,
    }


def test_openai_request_carries_tools_choice_and_sampling(tmp_path):
    policy = HarnessPolicy(model=ModelParams(tool_choice="required", seed=5, max_tokens=33))
    with provider([reply(200, openai_completion([("submit", {"answer": "ok"})]))]) as (server, url):
        summary, run_dir = start(RunSpec(Task(prompt="x"), f"openai-compatible:{url}/v1#m", policy, tmp_path))
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert (
        body["tool_choice"] == "required"
        and body["seed"] == step_params(policy.model, 1).seed
        and body["max_tokens"] == 33
        and body["temperature"] == 0
    )
    assert {t["function"]["name"] for t in body["tools"]} >= {"shell", "submit"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    usage = [e for e in events(run_dir) if e["type"] == "model_replied"][0]["reply"]["usage"]
    assert usage["prompt_tokens"] == 100 and usage["cached_tokens"] == 64 and usage["reasoning_tokens"] == 3
