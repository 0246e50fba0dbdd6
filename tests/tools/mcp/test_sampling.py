"""An MCP server's sampling requests (servers/sampling.py, a Python SDK server): refused unless its settings allow
them; then answered by the run's model through the same client, journaled as `sampling_replied`, billed to the run
(usage and cost in summary.json), answered from the journal when the call runs again and from the recording on
replay. Both protocol generations; the scripted model and the embedded one."""

from __future__ import annotations

import json

import pytest

from agent.dispatch import Dispatcher, dispatch
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.resume import resume
from agent.run.state import RunState
from agent.run.task import Task
from agent.sampling import Sampling
from agent.session import RunSpec, start
from core.mcp_settings import McpServer
from core.policy import CheckpointPolicy, HarnessPolicy, ModelParams, step_params
from core.types import Message, ToolCall, Usage
from tests.agent.helpers import call, events, new_journal
from tools.base import Registry
from tools.mcp import with_mcp

from .conftest import context, said, stdio

WORD = ScriptedReply(text="Paris", usage=Usage(prompt_tokens=20, completion_tokens=1))


def server(protocol: str = "auto", sampling: bool = True) -> McpServer:
    return stdio("sampling", "sampling.py", approve="never", sampling=sampling, protocol=protocol)


def priced(tmp_path):
    table = tmp_path / "prices.toml"
    table.write_text('[scripted."scripted"]\ninput = 1000000.0\noutput = 1000000.0\n')  # a dollar a token
    return table


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_a_sampling_request_allowed_by_the_policy_is_answered_by_the_runs_model_and_billed(tmp_path, protocol):
    agent = [call("sampling__name_it", text="the capital of France"), call("submit", answer="named")]
    model = ScriptedModel([agent[0], WORD, agent[1]])  # the run's model answers the server between its own replies
    policy = HarnessPolicy(mcp=[server(protocol)])
    spec = RunSpec(Task(prompt="Name it."), model, policy, tmp_path / "runs", prices=priced(tmp_path))
    summary, run_dir = start(spec)
    assert summary.stop_reason == "submitted"
    journal = events(run_dir)
    [sampled] = [e for e in journal if e["type"] == "sampling_replied"]
    [observed] = [
        e for e in journal if e["type"] == "tool_observed" and e["observation"]["tool"] == "sampling__name_it"
    ]
    assert sampled["seq"] < observed["seq"] and sampled["server"] == "sampling"
    assert sampled["call_id"] == observed["observation"]["call_id"] and sampled["request_messages"] == 2
    assert sampled["reply"]["message"]["text"] == "Paris" and sampled["cost_usd"] == pytest.approx(21.0)
    assert said(observed["observation"]["text"], "sampling") == "the model (scripted) named it: Paris"
    assert summary.sampling_calls == 1 and summary.sampling_tokens.prompt == 20
    replies = sum(e["cost_usd"] for e in journal if e["type"] == "model_replied")
    assert summary.cost_usd == pytest.approx(replies + 21.0)  # billed to the run beside its own replies
    assert json.loads((run_dir / "summary.json").read_text())["sampling_tokens"]["completion"] == 1


def test_a_sampling_request_is_refused_unless_the_servers_settings_allow_it(tmp_path):
    model = ScriptedModel([call("sampling__name_it", text="x"), call("submit", answer="done")])
    policy = HarnessPolicy(mcp=[server(sampling=False)])
    summary, run_dir = start(RunSpec(Task(prompt="Name it."), model, policy, tmp_path / "runs"))
    assert summary.stop_reason == "submitted" and model.calls == 2  # the model was asked nothing more
    [observed] = [e for e in events(run_dir) if e["type"] == "tool_observed" and e["observation"]["tool"] != "submit"]
    text = observed["observation"]["text"]
    assert observed["observation"]["status"] == "error" and "asked the run's model for a reply (sampling)" in text
    assert "its settings do not allow them (`sampling = true` on the server allows them" in text
    assert not [e for e in events(run_dir) if e["type"] == "sampling_replied"]


def test_a_flood_of_a_sampling_request_is_refused_before_the_model_sees_it(tmp_path):
    model = ScriptedModel([call("sampling__burn"), call("submit", answer="done")])
    summary, run_dir = start(RunSpec(Task(prompt="Burn."), model, HarnessPolicy(mcp=[server()]), tmp_path / "runs"))
    assert model.calls == 2 and summary.sampling_calls == 0
    [observed] = [e for e in events(run_dir) if e["type"] == "tool_observed" and e["observation"]["tool"] != "submit"]
    assert "240,000 characters, more than the 100,000" in observed["observation"]["text"]


def test_a_call_run_again_after_a_crash_is_answered_from_the_journal(tmp_path):
    agent = [call("sampling__name_it", text="the capital of France"), call("submit", answer="named")]
    policy = HarnessPolicy(mcp=[server()], checkpoint=CheckpointPolicy(interrupted_writes="rerun"))
    _, run_dir = start(RunSpec(Task(prompt="Name it."), ScriptedModel([agent[0], WORD, agent[1]]), policy, tmp_path))
    journal = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(journal) if '"sampling_replied"' in line) + 1
    (run_dir / "events.jsonl").write_text("".join(journal[:cut]))  # died after the reply, before the observation
    (run_dir / "summary.json").unlink()
    again = ScriptedModel([agent[0], WORD, agent[1]])
    done = resume(run_dir, model=again)
    assert done.summary is not None and done.summary.stop_reason == "submitted"
    assert again.calls == 3  # the resumed call's request was answered from the journal: the model was not asked
    log = read_events(run_dir)
    assert len([e for e in log if e.type == "sampling_replied"]) == 1
    [observed] = [e for e in log if e.type == "tool_observed" and e.observation.tool == "sampling__name_it"]
    assert said(observed.observation.text, "sampling") == "the model (scripted) named it: Paris"
    assert done.summary.sampling_calls == 1


def test_a_replay_answers_sampling_from_the_recording(tmp_path):
    agent = [call("sampling__name_it", text="the capital of France"), call("submit", answer="named")]
    _, run_dir = start(
        RunSpec(
            Task(prompt="Name it."), ScriptedModel([agent[0], WORD, agent[1]]), HarnessPolicy(mcp=[server()]), tmp_path
        )
    )
    played = replay(run_dir, tmp_path / "replay")
    assert not played.harness
    executed = replay(run_dir, tmp_path / "executed", execute=True)  # the server runs again and asks again
    assert not executed.world, executed.world
    [again] = [e for e in read_events(executed.replay_dir) if e.type == "sampling_replied"]
    assert again.reply is not None and again.reply.message.text == "Paris"


def test_each_sampling_request_draws_its_own_seed_and_a_resumed_call_draws_it_again(tmp_path):
    policy = HarnessPolicy(model=ModelParams(seed=7))
    asked = [("c1", 3), ("c1", 3), ("c2", 3), ("c1", 4)]  # (call, step): two requests of one call, another call's
    made = []
    for run in ("run", "resumed"):
        model = ScriptedModel([WORD] * 4)
        seen: list[int | None] = []
        model.complete = lambda messages, tools, params, seen=seen, asked=model.complete: (
            seen.append(params.seed) or asked(messages, tools, params)
        )
        sampling = Sampling(model, policy, new_journal(tmp_path, run), RunState(task=Task(prompt="x")), None)
        for call_id, step in asked:
            sampling(step, call_id, "sampling", [Message(role="user", text="name it")], 16)
        made.append(seen)
    assert made[0] == made[1] and len({*made[0], step_params(policy.model, 3).seed}) == 5
    assert made[0][1] == step_params(policy.model, 3, "sampling", "c1", 1).seed


@pytest.mark.model
def test_the_embedded_model_answers_a_sampling_request(tmp_path):
    """The embedded engine (SmolLM2-135M) as the run's model client answering the server, journaled at $0."""
    from agent.models import load_model
    from agent.models.pricing import DEFAULT_TABLE, find_price, load_prices

    model = load_model("local")
    journal = new_journal(tmp_path)
    try:
        with with_mcp([server()], Registry()) as tools:
            policy = HarnessPolicy()
            price = find_price(model.name, load_prices(DEFAULT_TABLE))
            state = RunState(task=Task(prompt="x"))
            sampling = Sampling(model, policy, journal, state, price)
            d = Dispatcher(tools=tools, ctx=context(300), policy=policy, journal=journal, sampling=sampling)
            call_ = ToolCall(id="c1", name="sampling__name_it", arguments='{"text": "the capital of France"}')
            [observation] = dispatch(d, [call_], 1).observations
    finally:
        journal.close()
        model.close()
    assert observation.status == "ok", observation.text
    [sampled] = [e for e in read_events(journal.dir) if e.type == "sampling_replied"]
    assert sampled.reply is not None and sampled.reply.usage.completion_tokens > 0 and sampled.cost_usd == 0.0
    reply = sampled.reply.message.text
    assert f"the model ({sampled.reply.model}) named it: {reply}" in observation.text
    assert state.usage.prompt_tokens == sampled.reply.usage.prompt_tokens  # counted in the run's usage
    assert isinstance(Message(role="assistant", text=reply), Message)
