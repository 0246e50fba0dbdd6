"""Runs whose policy sizes compaction as a share of the model's context window ("80%"): the run's window
decides where it folds; a run that cannot know its window does not start; replay and rerender use the
window the run recorded."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent.loop import run
from agent.models.pricing import load_prices
from agent.models.scripted import ScriptedModel
from agent.recorded.counterfactual import counterfactual
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, open_run, start
from agent.tokens import counter_for
from cli.main import app
from core.context_policy import Compact
from core.errors import HarnessError
from core.policy import HarnessPolicy, ModelParams
from memory.extractive import ExtractiveSummariser
from tests.agent.helpers import call, events

runner = CliRunner()
POLICY = HarnessPolicy(context=[Compact(trigger_tokens="80%", keep_recent_steps=1)], model=ModelParams(max_tokens=500))
SHARE_TOML = 'extends = "default"\n[[context]]\nkind = "compact"\ntrigger_tokens = "80%"\n'


class WindowedModel(ScriptedModel):
    """A scripted model that says its window, as the local engine's client and a server's do."""

    def __init__(self, replies, window):
        super().__init__(replies)
        self.window = window

    def context_window(self, params):
        return self.window


def steps(n: int):
    """`n` steps of a few hundred tokens each (different ones: the same output again would stop the run)."""
    shell = [call("shell", command=f"seq {1000 * i} {1000 * i + 150}") for i in range(1, n + 1)]
    return [*shell, call("submit", answer="done")]


def compacting_run(out, window: int, n: int = 25):
    """A run of `steps(n)` whose model says its window is `window`."""
    model = WindowedModel(steps(n), window)
    with open_run(RunSpec(Task(prompt="print words"), model, POLICY, out)) as session:
        summary = run(session, summariser=ExtractiveSummariser(counter_for(model)))
    return summary, session.journal.dir


def test_a_share_of_an_unknown_window_stops_the_run_before_it_journals_anything(tmp_path):
    with pytest.raises(HarnessError) as e:
        start(RunSpec(Task(prompt="x"), ScriptedModel([call("submit", answer="ok")]), POLICY, tmp_path / "runs"))
    message = str(e.value)
    assert 'context[0].trigger_tokens = "80%"' in message
    assert "share of the model's context window" in message and "`[model] context_window`" in message
    assert "a model whose window is known" in message
    assert not (tmp_path / "runs").exists()  # no run directory, no run.json, no events


def test_harness_run_says_what_to_set_in_one_paragraph_and_runs_once_the_window_is_set(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: submit, arguments: {answer: ok}}]\n")
    policy = tmp_path / "p.toml"
    policy.write_text(SHARE_TOML)
    args = ["run", "--task", "x", "--model", f"scripted:{script}", "--policy", str(policy)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert 'trigger_tokens = "80%"' in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()
    policy.write_text(SHARE_TOML + "[model]\ncontext_window = 8000\n")
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    [run_dir] = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["context_window"] == 8000


def test_the_same_policy_compacts_an_8k_run_at_80_percent_and_leaves_a_200k_run_alone(tmp_path):
    small, small_dir = compacting_run(tmp_path / "8k", 8_000)
    recorded = events(small_dir)
    first = next(i for i, e in enumerate(recorded) if e["type"] == "compaction")
    before = [e["counted_tokens"] for e in recorded[:first] if e["type"] == "model_replied"]
    assert small.compactions >= 1 and recorded[first]["trigger"] == "tokens" and recorded[first]["ok"]
    grown = before[-1] + (before[-1] - before[-2])  # the next prompt: one more step of the same size
    assert max(before) < 6_400 <= grown  # it folded once the next prompt reached 80% of 8,000, not sooner
    assert small.stop_reason == "submitted"

    large, large_dir = compacting_run(tmp_path / "200k", 200_000)
    counted = [e["counted_tokens"] for e in events(large_dir) if e["type"] == "model_replied"]
    assert large.compactions == 0 and max(counted) > 6_400  # the same prompts, far below 80% of 200,000
    assert large.stop_reason == "submitted"


def test_a_replay_sizes_the_share_by_the_window_the_run_recorded(tmp_path):
    """The window came from the model client, which a replay does not have: run.json's is used."""
    summary, run_dir = compacting_run(tmp_path / "runs", 8_000)
    assert summary.compactions >= 1
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.replayed_stop == "submitted"
    assert json.loads((report.replay_dir / "run.json").read_text())["context_window"] == 8_000


def test_rerender_uses_the_recorded_window_or_the_one_given(tmp_path):
    other = HarnessPolicy(name="share", context=[Compact(trigger_tokens="80%", keep_recent_steps=1)])
    prices = load_prices()
    _, known = compacting_run(tmp_path / "known", 8_000)
    by_recorded = counterfactual(known, [other], prices).policies[1]
    assert by_recorded.policy == "share" and by_recorded.compactions >= 1

    model = ScriptedModel(steps(25))  # the same trajectory, from a model whose window is not known
    _, unknown = start(RunSpec(Task(prompt="print words"), model, HarnessPolicy(), tmp_path / "unknown"))
    with pytest.raises(HarnessError, match='trigger_tokens = "80%"'):
        counterfactual(unknown, [other], prices)
    assert counterfactual(unknown, [other], prices, window=8_000).policies[1] == by_recorded

    policy = tmp_path / "p.toml"
    policy.write_text(SHARE_TOML)
    result = runner.invoke(app, ["rerender", str(unknown), "--policy", str(policy)])
    assert result.exit_code == 2 and "`[model] context_window`" in " ".join(result.output.split())
    result = runner.invoke(app, ["rerender", str(unknown), "--policy", str(policy), "--context-window", "8000"])
    assert result.exit_code == 0, result.output
