"""Property tests: rendering is deterministic, append-only prompts extend each other, cache-aware
folds never move the prefix, truncation keeps both ends exactly, failed approaches are never lost."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models.scripted import ScriptedModel, ScriptedReply
from core.context_policy import Compact, Limits, MaskObservations, StripReasoning, TruncationPolicy
from core.memory_types import FailedApproach, WorkingMemory
from core.policy import ModelParams
from core.types import Message
from memory.compaction import compact
from memory.folds import head_len, notes_at
from memory.render import render
from memory.summariser import ModelSummariser
from memory.tokens import TokenCounter
from memory.truncate import head_tail
from tests.memory.helpers import SYSTEM, TASK, step

# A byte-level tokenizer: real ids, no vocabulary to load, so properties run fast.
COUNTER = TokenCounter(lambda text: list(text.encode()), "bytes")

steps_st = st.lists(
    st.tuples(
        st.text(max_size=60), st.sampled_from(["ok", "error", "timeout"]), st.none() | st.text(min_size=1, max_size=20)
    ),
    min_size=1,
    max_size=12,
)
policy_st = st.lists(
    st.one_of(
        st.builds(StripReasoning, keep=st.sampled_from(["none", "last_turn", "all"])),
        st.builds(MaskObservations, keep_last=st.integers(0, 4)),
    ),
    max_size=3,
)


def build(spec) -> list[Message]:
    h = [SYSTEM, TASK]
    for i, (out, status, thought) in enumerate(spec, 1):
        h += step(i, output=out, status=status, reasoning=thought, payload=[{"sig": str(i)}] if thought else None)
    return h


def as_bytes(messages: list[Message]) -> bytes:
    return json.dumps([m.model_dump(mode="json") for m in messages], sort_keys=True).encode()


@given(steps_st, policy_st)
def test_rendering_is_deterministic(spec, policy):
    h = build(spec)
    copy = [Message.model_validate(m.model_dump()) for m in h]
    assert as_bytes(render(h, policy)) == as_bytes(render(h, policy)) == as_bytes(render(copy, policy))


@given(steps_st)
def test_append_only_prompts_are_prefixes_of_the_next(spec):
    h = build(spec)
    bounds = [i for i, m in enumerate(h) if m.role == "assistant"] + [len(h)]
    prompts = [render(h[:b], [StripReasoning(keep="all")]) for b in bounds]
    for a, b in zip(prompts, prompts[1:]):
        assert b[: len(a)] == a
        assert COUNTER.prompt_ids(b)[: len(COUNTER.prompt_ids(a))] == COUNTER.prompt_ids(a)


class Summaries:
    """A scripted summariser: replies with a fresh memory per fold (possibly forgetting failures)."""

    def __init__(self, memories):
        self.model = ScriptedModel([ScriptedReply(text=json.dumps(m.model_dump())) for m in memories])

    def summariser(self):
        return ModelSummariser(self.model, ModelParams())


memory_st = st.builds(
    WorkingMemory,
    goal=st.text(max_size=10),
    failed_approaches=st.lists(st.builds(FailedApproach, approach=st.text(min_size=1, max_size=8)), max_size=2),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(memory_st, min_size=1, max_size=6), st.integers(1, 3), st.sampled_from(["append", "rewrite"]))
def test_a_recorded_failed_approach_survives_every_later_compaction(memories, every, layout):
    cfg = Compact(every_steps=every, keep_recent_steps=1, layout=layout, trigger_tokens=10**9)
    summaries = Summaries(memories).summariser()
    h, folds, seen = [SYSTEM, TASK], [], set()
    for i in range(1, 3 * len(memories) + 2):
        h += step(i)
        if folds and i - folds[-1].last_step < every or not folds and i < every:
            continue
        result = compact(h, folds, cfg, render(h, [cfg], folds), COUNTER, summaries, "every_steps")
        if result.fold is None:
            break
        folds.append(result.fold)
        seen |= {f.approach for f in result.fold.memory.failed_approaches}
        assert seen <= {f.approach for f in result.fold.memory.failed_approaches}


@settings(max_examples=40, deadline=None)
@given(st.lists(memory_st, min_size=2, max_size=5), st.integers(0, 1500))
def test_cache_aware_folds_never_rewrite_what_the_prompt_already_held(memories, keep_first):
    cfg = Compact(
        every_steps=2,
        keep_recent_steps=1,
        layout="append",
        trigger_tokens=10**9,
        max_memory_tokens=10**9,
        keep_first_tokens=keep_first,
    )
    summaries = Summaries(memories).summariser()
    h, folds = [SYSTEM, TASK], []
    for i in range(1, 2 * len(memories) + 1):
        h += step(i)
        if i % 2:
            continue
        before = render(h, [cfg], folds)
        result = compact(h, folds, cfg, before, COUNTER, summaries, "every_steps")
        if result.fold is None:  # the steps kept first leave too few to fold: only ever before the first fold
            assert not folds and result.message.startswith("Nothing to fold")
            continue
        folds.append(result.fold)
        after = render(h, [cfg], folds)
        kept = notes_at(h, folds)  # the head and the whole steps that fit in keep_first_tokens
        assert after[:kept] == h[:kept]
        assert sum(COUNTER.count(m) for m in h[head_len(h) : kept]) <= keep_first
        stable = kept + len(folds) - 1  # and every earlier memory note
        assert after[:stable] == before[:stable]
        assert after[stable].text == result.fold.text


@given(st.text(), st.integers(0, 200), st.integers(0, 200), st.sampled_from(["shell", "grep"]))
def test_per_tool_truncation_keeps_head_and_tail_exactly(text, head, tail, tool):
    policy = TruncationPolicy(per_tool={"shell": Limits(head_chars=head, tail_chars=tail)})
    limits = policy.for_tool(tool)
    shown, cut = head_tail(text, limits, "artifacts/out.txt")
    if cut:
        assert shown.startswith(text[: limits.head_chars])
        assert shown.endswith(text[len(text) - limits.tail_chars :] if limits.tail_chars else "")
        assert f"{len(text) - limits.head_chars - limits.tail_chars} characters" in shown
        assert "artifacts/out.txt" in shown
    else:
        assert shown == text
