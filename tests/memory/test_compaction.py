"""Compaction through the real loop: the scripted model serves both the agent's replies and the summaries."""

from __future__ import annotations

import json

from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import Compact
from core.memory_types import FailedApproach, WorkingMemory
from core.policy import HarnessPolicy, ModelParams, step_params
from memory.compaction import compact
from memory.render import render
from memory.summariser import ModelSummariser, fresh_request
from memory.tokens import TokenCounter
from tests.agent.helpers import call, events
from tests.memory.helpers import history

COUNTER = TokenCounter(lambda text: list(text.encode()), "bytes")
MEMORY = WorkingMemory(
    goal="print hi",
    plan=["write", "run"],
    failed_approaches=[FailedApproach(approach="python2 hi.py", why="not installed")],
)


def summary(memory=MEMORY, **kw) -> ScriptedReply:
    return ScriptedReply(text=json.dumps(memory.model_dump()), **kw)


def run(tmp_path, replies, cfg):
    policy = HarnessPolicy(context=[cfg])
    return start(RunSpec(Task(prompt="print hi"), ScriptedModel(replies), policy, tmp_path))


def test_a_fold_is_journaled_with_tokens_memory_version_and_summariser_usage(tmp_path):
    cfg = Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")
    replies = [
        call("shell", command="echo 1"),
        call("shell", command="echo 2"),
        summary(),
        call("shell", command="echo 3"),
        call("submit", answer="done"),
    ]
    summary_, run_dir = run(tmp_path, replies, cfg)
    folds = [e for e in events(run_dir) if e["type"] == "compaction"]
    assert len(folds) == 1 and folds[0]["ok"] and folds[0]["version"] == 1
    fold = folds[0]["fold"]
    assert (fold["first_step"], fold["last_step"]) == (1, 1) and fold["memory"]["goal"] == "print hi"
    assert folds[0]["tokens_after"] < folds[0]["tokens_before"] or folds[0]["tokens_before"] < 2000
    assert folds[0]["summariser_usage"]["prompt_tokens"] > 0 and folds[0]["finish_reason"] == "stop"
    assert summary_.compactions == 1 and summary_.summariser_tokens.prompt > 0 and summary_.warnings == []
    assert summary_.stop_reason == "submitted" and summary_.prefix_reuse_rate is not None
    # The step after the fold was sent the memory in place of step 1.
    replied = [e for e in events(run_dir) if e["type"] == "model_replied"]
    assert replied[2]["prompt_messages"] == 2 + 1 + 2  # head, memory, step 2


def test_a_cut_off_summary_is_never_silent_and_is_retried_with_a_larger_cap(tmp_path):
    cfg = Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9, summary_max_tokens=64)
    replies = [
        call("shell", command="echo 1"),
        call("shell", command="echo 2"),
        ScriptedReply(text='{"goal": "print', finish_reason="length"),
        summary(),
        call("submit", answer="done"),
    ]
    summary_, run_dir = run(tmp_path, replies, cfg)
    fold = next(e for e in events(run_dir) if e["type"] == "compaction")
    assert fold["ok"] and fold["cut_off"] and [a["cap"] for a in fold["attempts"]] == [64, 128]
    assert summary_.warnings and "cut off by its token cap" in summary_.warnings[0]


def test_invalid_output_gets_one_repair_attempt():
    cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9)
    h = history(3)
    model = ScriptedModel([ScriptedReply(text="Sure! Here is the memory: {goal: oops}"), summary()])
    result = compact(h, [], cfg, render(h, [cfg]), COUNTER, ModelSummariser(model, ModelParams()), "every_steps")
    assert result.ok and [a.repair for a in result.attempts] == [False, True]
    assert "does not parse" in result.attempts[0].problem
    repair_prompt = model.calls  # both replies were used
    assert repair_prompt == 2


def seeds_of(model: ScriptedModel) -> list[int | None]:
    seen: list[int | None] = []
    original = model.complete
    model.complete = lambda messages, tools, params: seen.append(params.seed) or original(messages, tools, params)
    return seen


def test_each_summariser_call_of_a_fold_draws_its_own_seed_and_draws_it_again_when_made_again():
    cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9, summary_max_tokens=32)
    h = history(5)
    replies = [ScriptedReply(text="{", finish_reason="length"), ScriptedReply(text="{goal: oops}"), summary()]
    made = []
    for _ in range(2):  # the same fold made again, as a resumed run, a replay or a fork of the run makes it
        model = ScriptedModel(replies)
        seen = seeds_of(model)
        result = compact(
            h, [], cfg, render(h, [cfg]), COUNTER, ModelSummariser(model, ModelParams(seed=7)), "every_steps"
        )
        assert result.ok and [a.repair for a in result.attempts] == [False, False, True]
        made.append(seen)
    # The step the fold is made at (5 steps in the history) and the attempt are mixed with the policy's seed: the
    # retry at a larger cap and the repair draw apart from the reply they replace, and from the step's agent call.
    assert made[0] == made[1] and len({*made[0], 7}) == 4
    assert made[0] == [step_params(ModelParams(seed=7), 5, "summary", n).seed for n in range(3)]
    assert step_params(ModelParams(seed=7), 5).seed not in made[0]


def test_output_still_invalid_after_the_repair_leaves_the_history_as_it_was():
    cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9)
    h = history(3)
    model = ScriptedModel([ScriptedReply(text='{"plan": "not a list"}'), ScriptedReply(text="no")])
    result = compact(h, [], cfg, render(h, [cfg]), COUNTER, ModelSummariser(model, ModelParams()), "every_steps")
    assert not result.ok and result.fold is None and result.tokens_after == result.tokens_before
    assert "plan" in result.attempts[0].problem and len(result.attempts) == 2


def test_still_cut_off_at_the_larger_cap_folds_fewer_steps():
    cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9, summary_max_tokens=32)
    h = history(5)
    cut = ScriptedReply(text="{", finish_reason="length")
    model = ScriptedModel([cut, cut, summary()])
    result = compact(h, [], cfg, render(h, [cfg]), COUNTER, ModelSummariser(model, ModelParams()), "every_steps")
    assert result.ok and result.cut_off
    assert [a.steps for a in result.attempts] == [(1, 4), (1, 4), (1, 2)]
    assert (result.fold.first_step, result.fold.last_step) == (1, 2)


def test_the_summariser_reads_a_transcript_not_raw_json():
    h = history(2, output="3 failed, 10 passed", status="error")
    text = fresh_request(WorkingMemory(goal="g"), h[2:], (1, 2))[1].text
    assert "## Step 1" in text and "Agent called shell with" in text and "Result of shell (error):" in text
    assert '"role"' not in text and "tool_call_id" not in text
    assert "Drop what later steps made obsolete".lower() in text.lower()


def test_fork_mode_sends_the_agents_own_prompt_first():
    cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fork")
    h = history(3)
    prompt = render(h, [cfg])
    model = ScriptedModel([summary()])
    seen = []
    original = model.complete
    model.complete = lambda messages, tools, params: seen.append(list(messages)) or original(messages, tools, params)
    compact(h, [], cfg, prompt, COUNTER, ModelSummariser(model, ModelParams()), "every_steps")
    assert seen[0][: len(prompt)] == prompt and "Fold steps 1-2" in seen[0][-1].text


def test_what_the_summariser_spends_counts_toward_the_token_budget(tmp_path):
    from core.policy import StopPolicy
    from core.types import Usage

    cfg = Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9)
    costly = summary(usage=Usage(prompt_tokens=50_000, completion_tokens=100))
    replies = (
        [call("shell", command=f"echo {i}") for i in range(2)]
        + [costly]
        + [call("shell", command=f"echo {i}") for i in range(2, 9)]
    )
    policy = HarnessPolicy(context=[cfg], stop=StopPolicy(max_tokens=40_000))
    summary_, _ = start(RunSpec(Task(prompt="print hi"), ScriptedModel(replies), policy, tmp_path))
    assert summary_.stop_reason == "token_budget" and summary_.steps == 3
    assert summary_.summariser_tokens.prompt == 50_000


def test_the_extractive_summariser_is_cut_off_at_its_cap_like_a_model_and_compaction_recovers():
    from memory.extractive import ExtractiveSummariser

    h = history(12, output="Traceback\nValueError: boom", status="error")

    def fold(cap):
        cfg = Compact(every_steps=1, keep_recent_steps=1, trigger_tokens=10**9, summary_max_tokens=cap)
        return compact(h, [], cfg, render(h, [cfg]), COUNTER, ExtractiveSummariser(COUNTER), "every_steps")

    recovered = fold(1400)  # the memory needs more than 1400 tokens and fewer than 2800
    assert recovered.ok and recovered.cut_off and [a.finish_reason for a in recovered.attempts] == ["length", "stop"]
    assert len(recovered.fold.memory.failed_approaches) == 11 and "cut off by its token cap 1 time" in recovered.message
    hopeless = fold(40)
    assert not hopeless.ok and hopeless.fold is None and len(hopeless.attempts) == 3
    assert hopeless.message.startswith("Compaction failed (cut off by its token cap)")


class ParamsWatching(ScriptedModel):
    """The scripted model, keeping the tool_choice of each request it answers."""

    def __init__(self, replies):
        super().__init__(replies)
        self.choices: list[str] = []

    def complete(self, messages, tools, params):
        self.choices.append(params.tool_choice)
        return super().complete(messages, tools, params)


def test_the_summariser_answers_in_text_under_a_policy_that_forces_tool_calls(tmp_path):
    """The `local` preset constrains every agent reply to a tool call; a summary is text."""
    cfg = Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt="fresh")
    model = ParamsWatching(
        [call("shell", command="echo 1"), call("shell", command="echo 2"), summary(), call("submit", answer="hi")]
    )
    policy = HarnessPolicy(context=[cfg], model=ModelParams(tool_choice="required"))
    summary_, run_dir = start(RunSpec(Task(prompt="print hi"), model, policy, tmp_path))
    assert summary_.stop_reason == "submitted"
    assert model.choices == ["required", "required", "none", "required"]
    [folded] = [e for e in events(run_dir) if e["type"] == "compaction"]
    assert folded["ok"]
