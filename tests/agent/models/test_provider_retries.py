"""Retries against a scripted HTTP provider (a real loopback server standing in for OpenAI and
Anthropic): 429 with Retry-After, 500 and a dropped connection are retried by the harness's
policy and the run goes on; a 401 stops the run at once, naming the cause."""

from __future__ import annotations

import pytest

from agent.fork import fork
from agent.models import load_model
from agent.run.task import Task
from agent.session import RunSpec, start
from core.errors import PermanentModelError, TransientModelError
from core.policy import ErrorPolicy, HarnessPolicy, ModelParams
from tests.agent.helpers import events
from tests.agent.models.provider_double import (
    DROP,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
    provider,
    reply,
)

FAST = HarnessPolicy(errors=ErrorPolicy(model_attempts=5, backoff_multiplier_s=0.01, backoff_max_s=0.05))

SUBMIT_OA = reply(200, openai_completion([("submit", {"answer": "done"})]))
SUBMIT_AN = reply(
    200, anthropic_message([{"type": "tool_use", "id": "toolu_1", "name": "submit", "input": {"answer": "done"}}])
)
FLAKY = {
    "openai": [
        reply(429, openai_error(429, "slow down"), {"retry-after": "0.01"}),
        reply(500, openai_error(500, "boom")),
        DROP,
        SUBMIT_OA,
    ],
    "anthropic": [
        reply(429, anthropic_error("rate_limit_error", "slow down"), {"retry-after": "0.01"}),
        reply(500, anthropic_error("api_error", "boom")),
        DROP,
        SUBMIT_AN,
    ],
}
UNAUTHORISED = {
    "openai": reply(401, openai_error(401, "Incorrect API key provided")),
    "anthropic": reply(401, anthropic_error("authentication_error", "invalid x-api-key")),
}


def spec(api: str, url: str) -> str:
    return f"openai-compatible:{url}/v1#m" if api == "openai" else f"anthropic-compatible:{url}#m"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_rate_limit_server_error_and_dropped_connection_are_retried(tmp_path, api):
    with provider(FLAKY[api]) as (server, url):
        summary, run_dir = start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path))
    assert summary.stop_reason == "submitted" and summary.model_failures == 3
    assert len(server.requests) == 4  # the SDK's own retries are off: each failure is one request
    failed = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert [f["transient"] for f in failed] == [True, True, True]
    assert "429" in failed[0]["message"] and "500" in failed[1]["message"] and "connect" in failed[2]["message"]
    assert summary.tokens.cached == (64 if api == "openai" else 70)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_unauthorised_stops_the_run_at_once_naming_the_cause(tmp_path, api):
    with provider([UNAUTHORISED[api], SUBMIT_OA]) as (server, url):
        summary, _ = start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path))
    assert summary.stop_reason == "model_error" and len(server.requests) == 1
    assert "401" in summary.message and "authentication failed" in summary.message


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_retry_after_header_reaches_the_harness(api):
    body = openai_error(429, "x") if api == "openai" else anthropic_error("rate_limit_error", "x")
    with provider([reply(429, body, {"retry-after": "7"}), reply(503, body, {"retry-after-ms": "250"})]) as (_, url):
        model = load_model(spec(api, url))
        for expected in (7.0, 0.25):
            with pytest.raises(TransientModelError) as err:
                model.complete([], [], ModelParams())
            assert err.value.retry_after == pytest.approx(expected)


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_client_errors_are_permanent(status):
    with provider([reply(status, openai_error(status, "no such thing"))]) as (_, url):
        with pytest.raises(PermanentModelError, match=f"HTTP {status}.*no such thing"):
            load_model(spec("openai", url)).complete([], [], ModelParams())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_run_sends_one_session_key_with_every_request_and_another_run_another(tmp_path, api):
    with provider(FLAKY[api] + FLAKY[api]) as (server, url):
        start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path / "a"))
        start(RunSpec(Task(prompt="finish"), spec(api, url), FAST, tmp_path / "b"))
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in server.requests]
    keys = [h.get("x-harness-session") for h in headers]
    assert len(keys) == 8 and None not in keys
    assert len(set(keys[:4])) == 1 and len(set(keys[4:])) == 1 and keys[0] != keys[4]
    # With the run's tool timeout, which the server's prefix cache holds the run's prefix for.
    assert {h.get("x-harness-return-within") for h in headers} == {f"{FAST.dispatch.tool_timeout_s:g}"}


def test_a_fork_made_from_a_model_string_tells_the_server_its_own_tool_timeout(tmp_path):
    """The fork's requests carry the fork's policy's tool timeout, as a run's do: the server holds its prefix
    while a tool runs."""
    plan = [
        reply(200, openai_completion([("shell", {"command": "echo one > a.txt"})])),
        SUBMIT_OA,
        SUBMIT_OA,  # the fork's own step
    ]
    slow = FAST.model_copy(update={"dispatch": FAST.dispatch.model_copy(update={"tool_timeout_s": 240.0})})
    with provider(plan) as (server, url):
        _, parent = start(RunSpec(Task(prompt="finish"), spec("openai", url), FAST, tmp_path / "runs"))
        made = fork(parent, 1, policy=slow, out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in server.requests]
    assert [h.get("x-harness-return-within") for h in headers] == [f"{FAST.dispatch.tool_timeout_s:g}"] * 2 + ["240"]
