"""Each run's context window: the policy's override, else what the client knows (a server's model list,
the local engine), else the known windows of windows.toml, else unknown; recorded in run.json. A prompt
that leaves no room for the reply in the window is not sent: the run stops as `context_overflow`."""

from __future__ import annotations

import json

import pytest

from agent.models import load_model
from agent.models.scripted import ScriptedModel
from agent.models.windows import context_window, known_window
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy, ModelParams, OverflowPolicy
from tests.agent.helpers import call, events
from tests.agent.models.provider_double import openai_completion, provider, reply
from tests.agent.models.test_provider_retries import SUBMIT_OA


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("openai:gpt-4o", 128000),
        ("openai:gpt-4o-2024-08-06", 128000),
        ("openai:gpt-4o-mini", 128000),
        ("openai:gpt-4.1-mini-2025-04-14", 1047576),
        ("openai:gpt-4-0613", 8192),
        ("openai:gpt-5", 400000),
        ("openai:gpt-5-mini-2025-08-07", 400000),
        ("openai:gpt-5-chat-latest", 128000),
        ("openai:o3", 200000),
        ("openai:o4-mini", 200000),
        ("anthropic:claude-sonnet-4-5-20250929", 200000),
        ("anthropic:claude-opus-4-1-20250805", 200000),
        ("anthropic:claude-3-5-haiku-20241022", 200000),
        ("openai-compatible:http://127.0.0.1:1/v1#gpt-4o", 128000),  # a gateway serving the provider's model
        ("openai:davinci-002", None),
        ("anthropic:gpt-4o", None),  # one provider's names are not another's
        ("openai-compatible:http://127.0.0.1:1/v1#smollm2", None),
        ("scripted:demo.yaml", None),
    ],
)
def test_known_windows_match_the_longest_listed_prefix(model, window):
    assert known_window(model) == window


class WindowedModelDouble(ScriptedModel):
    """A scripted model that says its window, as the local engine's client and a server's do."""

    def __init__(self, replies, window):
        super().__init__(replies)
        self.name = "openai:gpt-4o"
        self.window = window

    def context_window(self, params):
        return self.window


def test_the_policy_wins_then_the_client_then_the_table():
    said = WindowedModelDouble([], 5000)
    assert context_window(said, ModelParams(context_window=777)) == 777
    assert context_window(said, ModelParams()) == 5000
    assert context_window(WindowedModelDouble([], None), ModelParams()) == 128000  # the client does not know
    assert context_window(ScriptedModel([]), ModelParams()) is None


@pytest.mark.parametrize("on_overflow", ["stop", "compact", "truncate"])
def test_a_task_over_the_window_is_not_sent_and_the_run_stops(tmp_path, on_overflow):
    """No recovery shrinks the task itself: under `stop` the run ends as context_overflow, otherwise as
    context_exhausted once the recoveries are spent."""
    model = ScriptedModel([call("submit", answer="never")])
    policy = HarnessPolicy(
        model=ModelParams(context_window=600, max_tokens=100), overflow=OverflowPolicy(on_overflow=on_overflow)
    )
    summary, run_dir = start(RunSpec(Task(prompt="word " * 1000), model, policy, tmp_path))
    assert summary.stop_reason == ("context_overflow" if on_overflow == "stop" else "context_exhausted")
    assert not [e for e in events(run_dir) if e["type"] in ("model_replied", "model_failed")]
    message = summary.message
    assert "context window of 600 tokens" in message and "(model.max_tokens)" in message, message
    assert "compact" in message and "model.context_window" in message
    assert json.loads((run_dir / "run.json").read_text())["context_window"] == 600


def test_a_prompt_within_the_window_less_the_reply_is_sent(tmp_path):
    model = ScriptedModel([call("submit", answer="ok")])
    policy = HarnessPolicy(model=ModelParams(context_window=200000))
    summary, _ = start(RunSpec(Task(prompt="word " * 1000), model, policy, tmp_path))
    assert summary.stop_reason == "submitted"


def test_the_room_left_for_the_reply_is_model_max_tokens(tmp_path):
    prompt = Task(prompt="word " * 1000)
    roomy = HarnessPolicy(model=ModelParams(context_window=1800, max_tokens=16))
    summary, _ = start(RunSpec(prompt, ScriptedModel([call("submit", answer="ok")]), roomy, tmp_path / "a"))
    assert summary.stop_reason == "submitted"
    tight = roomy.model_copy(update={"model": ModelParams(context_window=1800, max_tokens=1500)})
    summary, _ = start(RunSpec(prompt, ScriptedModel([call("submit", answer="ok")]), tight, tmp_path / "b"))
    assert summary.stop_reason == "context_exhausted" and "with the 1500 its reply may have" in summary.message


def test_an_unknown_window_checks_nothing_and_run_json_says_none(tmp_path):
    summary, run_dir = start(
        RunSpec(Task(prompt="word " * 1000), ScriptedModel([call("submit", answer="ok")]), HarnessPolicy(), tmp_path)
    )
    assert summary.stop_reason == "submitted"
    assert json.loads((run_dir / "run.json").read_text())["context_window"] is None


LISTING = {
    "object": "list",
    "data": [
        {"id": "other", "object": "model", "created": 0, "owned_by": "x", "context_window": 1},
        {"id": "m", "object": "model", "created": 0, "owned_by": "x", "max_model_len": 32768},
    ],
}


def test_a_compatible_servers_model_list_gives_the_window_asked_once(tmp_path):
    with provider([SUBMIT_OA], listing=LISTING) as (server, url):
        model = load_model(f"openai-compatible:{url}/v1#m")
        summary, run_dir = start(RunSpec(Task(prompt="finish"), model, HarnessPolicy(), tmp_path))
        assert model.context_window(ModelParams()) == 32768
    assert summary.stop_reason == "submitted"
    assert json.loads((run_dir / "run.json").read_text())["context_window"] == 32768
    assert server.gets == ["/v1/models"]


def test_a_server_without_a_model_list_leaves_the_window_unknown(tmp_path):
    with provider([reply(200, openai_completion([("submit", {"answer": "done"})]))]) as (server, url):
        summary, run_dir = start(
            RunSpec(Task(prompt="finish"), f"openai-compatible:{url}/v1#m", HarnessPolicy(), tmp_path)
        )
    assert summary.stop_reason == "submitted" and server.gets == ["/v1/models"]
    assert json.loads((run_dir / "run.json").read_text())["context_window"] is None


def test_openai_itself_is_not_asked_for_a_window(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_model("openai:gpt-4o-2024-08-06")
    assert model.context_window(ModelParams()) is None  # no request: OpenAI's model list gives no window
    assert context_window(model, ModelParams()) == 128000
