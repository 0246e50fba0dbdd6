"""`harness rerender`: prompts rebuilt from the journal alone, under another policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.store import Journal, RunInfo, read_events
from agent.loop import run
from agent.models.pricing import Price
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.parts import Session
from agent.recorded.counterfactual import counterfactual
from agent.recorded.rerender import HELD_FIXED, replay_history, rerender
from agent.run.task import Task
from agent.session import RunSpec, prepare, start
from agent.tokens import counter_for
from cli.main import app
from core.context_policy import Compact, MaskObservations
from core.policy import HarnessPolicy, StopPolicy
from core.types import Usage
from memory.extractive import ExtractiveSummariser
from memory.render import render
from sandboxes.local import LocalSandbox
from tests.agent.helpers import call
from tools.builtin import STANDARD, standard_tools

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories"
BIG = "".join(f"line {i}: " + "x" * (i % 90) + "\n" for i in range(3000))


def hundred_steps(tmp_path) -> Path:
    replies = [call("read_file", path="big.txt", start_line=1 + 29 * i, end_line=200 + 29 * i) for i in range(99)]
    replies.append(call("submit", answer="read it all"))
    policy = HarnessPolicy(stop=StopPolicy(max_steps=100))
    summary, run_dir = start(
        RunSpec(Task(prompt="read big.txt", files={"big.txt": BIG}), ScriptedModel(replies), policy, tmp_path)
    )
    assert summary.steps == 100 and summary.stop_reason == "submitted"
    return run_dir


def test_rerender_of_a_100_step_journal_reports_every_step(tmp_path):
    # Its speed (the bound is 5 s) is measured by benchmarks/bench_rerender.py, not here.
    run_dir = hundred_steps(tmp_path)
    runner = CliRunner()
    for policy in ("compact_cache_aware", "lean"):
        result = runner.invoke(app, ["rerender", str(run_dir), "--policy", policy, "--per-step"])
        assert result.exit_code == 0, result.output
        assert "held fixed" in result.output and policy in result.output


def test_rerendering_under_the_recorded_policy_reproduces_the_recorded_prompts(tmp_path):
    run_dir = hundred_steps(tmp_path)
    events = read_events(run_dir)
    recorded = [e for e in events if e.type == "model_replied"]
    counter = counter_for("scripted")
    again = rerender(events, [], counter, STANDARD, keep_prompts=True)
    assert [s.messages for s in again.steps] == [e.prompt_messages for e in recorded]
    assert [s.prompt_tokens for s in again.steps] == [e.counted_tokens for e in recorded]
    assert [s.reused for s in again.steps] == [e.prefix_reused for e in recorded]


def test_a_compacted_run_rerenders_with_its_own_journaled_folds(tmp_path):
    cfg = Compact(every_steps=3, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")
    memory = '{"goal": "read big.txt", "failed_approaches": [{"approach": "cat", "why": "too long"}]}'
    replies = []
    for i in range(9):
        replies.append(call("read_file", path="big.txt", start_line=1 + 50 * i, end_line=40 + 50 * i))
        if i in (2, 5, 8):
            replies.append(ScriptedReply(text=memory))
    replies.append(call("submit", answer="ok"))
    policy = HarnessPolicy(context=[cfg])
    summary, run_dir = start(
        RunSpec(Task(prompt="read big.txt", files={"big.txt": BIG}), ScriptedModel(replies), policy, tmp_path)
    )
    assert summary.compactions == 3 and summary.stop_reason == "submitted"
    events = read_events(run_dir)
    again = rerender(events, [cfg], counter_for("scripted"), STANDARD, recorded_folds=True)
    recorded = [e for e in events if e.type == "model_replied"]
    assert [s.messages for s in again.steps] == [e.prompt_messages for e in recorded]
    assert [s.prompt_tokens for s in again.steps] == [e.counted_tokens for e in recorded]
    assert [f.memory.failed_approaches[0].approach for f in again.folds] == ["cat"] * 3


def test_the_recorded_policy_of_a_compacted_run_costs_its_recorded_summaries(tmp_path):
    """Its folds are its own, so nothing is summarised again; its summariser calls still cost what they did, or
    the compacting policy that made them would look cheaper than a policy summarised anew beside it."""
    cfg = Compact(every_steps=3, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")
    summary_reply = ScriptedReply(text='{"goal": "read big.txt"}', usage=Usage(prompt_tokens=900, completion_tokens=40))
    replies = []
    for i in range(6):
        replies.append(call("read_file", path="big.txt", start_line=1 + 50 * i, end_line=40 + 50 * i))
        if i in (2, 5):
            replies.append(summary_reply)
    replies.append(call("submit", answer="ok"))
    task, policy = Task(prompt="read big.txt", files={"big.txt": BIG}), HarnessPolicy(name="compacting", context=[cfg])
    summary, run_dir = start(RunSpec(task, ScriptedModel(replies, name="openai:gpt-4o"), policy, tmp_path))
    assert summary.compactions == 2
    table = {("openai", "gpt-4o"): Price(provider="openai", model="gpt-4o", input=2.5, output=10.0)}
    [recorded, again] = counterfactual(run_dir, [HarnessPolicy(name="again", context=[cfg])], table).policies
    assert recorded.summariser == Usage(prompt_tokens=1800, completion_tokens=80)
    assert recorded.summariser_cost_usd == pytest.approx((1800 * 2.5 + 80 * 10.0) / 1e6)
    assert recorded.cost_usd == pytest.approx(sum(s.cost_usd for s in recorded.steps) + recorded.summariser_cost_usd)
    assert again.summariser.prompt_tokens > 0  # the extractive summariser, asked anew


def test_a_fixture_under_other_policies():
    events = read_events(FIXTURES / "tenacity-stop-off-by-one")
    counter = counter_for("scripted")
    append = rerender(events, [], counter, STANDARD)
    masked = rerender(events, [MaskObservations(keep_last=5)], counter, STANDARD)
    folded = rerender(events, [Compact(trigger_tokens=append.peak // 3, keep_recent_steps=1)], counter, STANDARD)
    assert len(append.steps) == len(masked.steps) == len(folded.steps) >= 60
    assert masked.peak < append.peak / 2 and folded.peak < append.peak / 2.5
    assert append.reuse_rate > 0.95 and masked.reuse_rate < append.reuse_rate
    assert folded.folds and folded.summariser.prompt_tokens > 0
    # The replies are the recorded ones: every rebuilt prompt ends where the journal says the step began.
    histories = [list(h) for _, h, _, _, _ in replay_history(events)]
    assert render(histories[-1], []) == histories[-1]
    assert "held fixed" in HELD_FIXED


def test_rerender_prices_the_tools_the_run_recorded(tmp_path):
    """A chess game offers the chess tools, not the standard set: rerender under the recorded policy
    must give the very token counts the run measured while it ran."""
    result = CliRunner().invoke(
        app,
        [
            "chess",
            "--games",
            "1",
            "--model",
            "player:random",
            "--opponent",
            "stockfish:skill=0,depth=1",
            "--max-plies",
            "6",
            "--analysis-depth",
            "0",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    [run_dir] = [p.parent for p in tmp_path.rglob("run.json")]
    events = read_events(run_dir)
    counted = sum(e.counted_tokens for e in events if e.type == "model_replied")
    result = CliRunner().invoke(app, ["rerender", str(run_dir), "--policy", "default"])
    assert result.exit_code == 0, result.output
    assert "tools the run offered" in result.output
    recorded_row = next(line for line in result.output.splitlines() if "(recorded)" in line)
    assert f"{counted:,}" in recorded_row


def test_rerender_and_the_loop_compact_through_the_same_pipeline(tmp_path):
    """A run that compacted with the extractive summariser, re-rendered under its own policy with
    that summariser: the re-render folds at the same steps, into the same folds and prompts."""
    cfg = Compact(trigger_tokens=2500, keep_recent_steps=2, layout="append", summariser_prompt="fork")
    policy = HarnessPolicy(context=[cfg, MaskObservations(keep_last=3)], stop=StopPolicy(max_steps=40))
    replies = [call("read_file", path="big.txt", start_line=1 + 20 * i, end_line=30 + 20 * i) for i in range(39)]
    model = ScriptedModel([*replies, call("submit", answer="ok")])
    task = Task(prompt="read big.txt", files={"big.txt": BIG})
    info = RunInfo(
        run_id="r",
        task=task.model_dump(mode="json"),
        model=model.name,
        sandbox="local",
        policy=policy.model_dump(mode="json"),
        started_at="2026-01-01T00:00:00Z",
    )
    journal = Journal.create(tmp_path, info)
    box = LocalSandbox(journal.dir / "workspace")
    try:
        prepare(task, box, 60)
        session = Session(task=task, policy=policy, model=model, journal=journal, sandbox=box, tools=standard_tools())
        summary = run(session, summariser=ExtractiveSummariser(counter_for(model)))
    finally:
        box.close()
        journal.close()
    assert summary.stop_reason == "submitted" and summary.compactions >= 2
    events = read_events(journal.dir)
    again = rerender(events, policy.context, counter_for(model), STANDARD)
    assert again.folds == [e.fold for e in events if e.type == "compaction" and e.fold is not None]
    recorded = [e for e in events if e.type == "model_replied"]
    assert [s.prompt_tokens for s in again.steps] == [e.counted_tokens for e in recorded]
