"""Overflow recovery (agent.overflow): a prompt too long for the model's window is made to fit, on the record."""

from __future__ import annotations

import json

import pytest

from agent.models.pricing import load_prices
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import Compact
from core.memory_types import WorkingMemory
from core.policy import HarnessPolicy, ModelParams, OverflowPolicy, TruncationPolicy
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.text import run_markdown
from tests.agent.helpers import call, events

WINDOW = 8000


def long_outputs(n: int, lines: int = 4000) -> list[ScriptedReply]:
    """`n` steps that each print a few thousand tokens, then a submit."""
    return [call("shell", command=f"seq {i} {lines}") for i in range(1, n + 1)] + [call("submit", answer="done")]


def policy(**overflow) -> HarnessPolicy:
    return HarnessPolicy(model=ModelParams(context_window=WINDOW), overflow=OverflowPolicy(**overflow))


def prompts_fit(run_dir, window: int = WINDOW, reply: int = 1024) -> list[int]:
    sent = [e["counted_tokens"] for e in events(run_dir) if e["type"] == "model_replied"]
    assert sent and all(tokens + reply <= window for tokens in sent), sent
    return sent


def overflows(run_dir) -> list[dict]:
    return [e for e in events(run_dir) if e["type"] == "context_overflow"]


def test_an_emergency_fold_makes_room_at_every_step_that_overflows(tmp_path):
    p = policy(summariser="extractive")  # a scripted model would answer a summary request with its next tool call
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(7)), p, tmp_path))
    assert summary.stop_reason == "submitted"
    prompts_fit(run_dir)
    found = overflows(run_dir)
    assert len(found) >= 4 and all(e["action"] == "compact" and e["source"] == "counted" for e in found)
    assert all(e["fold"] is not None and e["tokens"] + 1024 > WINDOW >= e["tokens_after"] + 1024 for e in found)
    assert [e["fold"]["version"] for e in found] == list(range(1, len(found) + 1))
    assert not [e for e in events(run_dir) if e["type"] == "summary_replied"]
    assert summary.overflow_recoveries == len(found)
    assert summary.overflow_dropped_tokens == sum(e["tokens"] - e["tokens_after"] for e in found)


def test_a_summary_request_too_long_for_the_window_goes_to_the_extractive_summariser(tmp_path):
    """A summary cap of most of the window leaves no room for the request: no model is asked, and the fold is
    made by rules."""
    p = policy().model_copy(update={"context": [Compact(summary_max_tokens=6000)]})
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(4)), p, tmp_path))
    assert summary.stop_reason == "submitted"
    prompts_fit(run_dir)
    assert overflows(run_dir) and all(e["fold"] is not None for e in overflows(run_dir))
    assert not [e for e in events(run_dir) if e["type"] == "summary_replied"]


def test_the_report_says_what_each_recovery_lost(tmp_path):
    p = policy(summariser="extractive")
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(4)), p, tmp_path))
    run = load_run(run_dir, load_prices())
    text = run_markdown(run)
    first = overflows(run_dir)[0]
    fold = first["fold"]
    assert f"step {first['step']}: The prompt ({first['tokens']:,} tokens, 1,024 kept for the reply)" in text
    assert f"steps {fold['first_step']}–{fold['last_step']} folded into working memory v1" in text
    html = render_run(run).read_text()
    assert "Context overflow · what was lost" in html and "folded into working memory v1" in html


def test_truncation_cuts_the_largest_outputs_and_keeps_their_full_text(tmp_path):
    summary, run_dir = start(
        RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(5)), policy(on_overflow="truncate"), tmp_path)
    )
    assert summary.stop_reason == "submitted"
    prompts_fit(run_dir)
    found = overflows(run_dir)
    assert found and all(e["action"] == "truncate" and e["fold"] is None and e["cuts"] for e in found)
    observed = {
        e["observation"]["call_id"]: e["observation"]["text"] for e in events(run_dir) if e["type"] == "tool_observed"
    }
    for cut in (c for e in found for c in e["cuts"]):
        assert cut["tokens_after"] < cut["tokens_before"] and cut["artifact"] in cut["text"]
        assert (run_dir / cut["artifact"]).read_text() == observed[cut["call_id"]]  # the text before the cut
    # A cut holds in later prompts: an output cut again is cut from what the earlier cut left.
    last: dict[str, int] = {}
    for cut in (c for e in found for c in e["cuts"]):
        assert last.get(cut["call_id"], cut["tokens_before"]) == cut["tokens_before"]
        last[cut["call_id"]] = cut["tokens_after"]


def test_a_failed_fold_falls_back_to_truncation(tmp_path):
    """The scripted model answers the summariser (and its one repair request) with tool calls, which are no
    memory: truncation then makes room in the same step."""
    junk = call("shell", command="true")
    replies = [*long_outputs(2)[:2], junk, junk, call("submit", answer="done")]
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(replies), policy(), tmp_path))
    assert summary.stop_reason == "submitted"
    prompts_fit(run_dir)
    actions = [(e["step"], e["action"], e["fold"] is not None) for e in overflows(run_dir)]
    step, action, folded = actions[0]
    assert (action, folded) == ("compact", False) and actions[1] == (step, "truncate", False)
    assert "Compaction failed" in overflows(run_dir)[0]["message"]


def test_the_models_summariser_writes_the_emergency_memory_when_its_request_fits(tmp_path):
    memory = WorkingMemory(goal="count to 2500", decisions=["keep counting"])
    replies = long_outputs(2)[:2] + [ScriptedReply(text=json.dumps(memory.model_dump(mode="json")))]  # its turn
    replies += [call("shell", command="echo 3"), call("submit", answer="done")]
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(replies), policy(), tmp_path))
    assert summary.stop_reason == "submitted"
    (first,) = overflows(run_dir)
    assert first["fold"]["memory"]["decisions"] == ["keep counting"]
    (asked,) = [e for e in events(run_dir) if e["type"] == "summary_replied"]
    assert asked["step"] == first["step"] and asked["seq"] < first["seq"]


def test_an_output_longer_than_its_share_of_the_window_is_cut_when_it_is_made(tmp_path):
    wide = TruncationPolicy(head_chars=10**6, tail_chars=10**6)  # the characters' cut lets it all through
    p = policy().model_copy(update={"truncation": wide})
    summary, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(1, lines=60000)), p, tmp_path))
    assert summary.stop_reason == "submitted"
    (obs,) = [
        e["observation"]
        for e in events(run_dir)
        if e["type"] == "tool_observed" and e["observation"]["tool"] == "shell"
    ]
    full = (run_dir / obs["truncation"]["artifact"]).read_text()
    assert full.splitlines()[-1] == "60000" and obs["truncation"]["original_chars"] == len(full)
    assert obs["truncation"]["artifact"] in obs["text"] and len(obs["text"]) < len(full) // 10
    assert not overflows(run_dir)  # half the window: the next prompt still fits


@pytest.mark.parametrize("on_overflow", ["stop", "compact"])
def test_a_step_whose_recoveries_make_no_room_stops_as_context_exhausted(tmp_path, on_overflow):
    """The task itself fills the window: nothing can be folded or cut, and the run says so instead of looping."""
    task = Task(prompt="Count. " + "one two three " * 3000)
    summary, run_dir = start(RunSpec(task, ScriptedModel(long_outputs(1)), policy(on_overflow=on_overflow), tmp_path))
    assert summary.stop_reason == ("context_overflow" if on_overflow == "stop" else "context_exhausted")
    assert [e["action"] for e in overflows(run_dir)] == ([] if on_overflow == "stop" else ["compact", "truncate"])
    assert not [e for e in events(run_dir) if e["type"] == "model_replied"]


@pytest.mark.parametrize("on_overflow", ["compact", "truncate"])
def test_a_run_that_recovered_replays_without_divergence(tmp_path, on_overflow):
    """Replay folds the recoveries back from the journal and makes the same ones: same prompts, same events."""
    p = policy(on_overflow=on_overflow, summariser="extractive")
    _, run_dir = start(RunSpec(Task(prompt="Count."), ScriptedModel(long_outputs(5)), p, tmp_path / "runs"))
    assert overflows(run_dir)
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.recorded_stop == report.replayed_stop == "submitted"
    replayed = overflows(report.replay_dir)
    assert [(e["action"], e["tokens"], e["tokens_after"]) for e in replayed] == [
        (e["action"], e["tokens"], e["tokens_after"]) for e in overflows(run_dir)
    ]
