"""Facts in the working memory: each with the step and call it was observed at, and a newer value of the
same thing supersedes the older, which is kept with the steps it held for; a fold that drops a fact without
superseding it is refused (the fact is put back), as a dropped failed approach is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.memory_types import (
    SUPERSEDED_HEADER,
    Fact,
    FailedApproach,
    Superseded,
    WorkingMemory,
    memory_text,
    merged,
)
from memory.folds import delta_text


def fact(about, value, step=None, source=None):
    return Fact(about=about, value=value, at_step=step, source=source)


def test_a_newer_value_supersedes_the_older_which_is_kept_with_its_steps():
    before = WorkingMemory(facts=[fact("config.ini timeout", "30", 3, "c3")])
    after = merged(before, WorkingMemory(facts=[fact("config.ini timeout", "60", 9, "c9")]), step=10)
    assert after.facts == [Fact(about="config.ini timeout", value="60", at_step=9, source="c9", supersedes="30")]
    assert after.superseded == [Superseded(about="config.ini timeout", value="30", from_step=3, until_step=9, by="60")]


def test_a_fold_that_drops_a_fact_or_a_failure_without_superseding_it_is_refused():
    before = WorkingMemory(
        facts=[fact("tests", "1 failed", 2, "c2")], failed_approaches=[FailedApproach(approach="pip install x")]
    )
    after = merged(before, WorkingMemory(goal="g"), step=5)
    assert after.facts == before.facts and after.failed_approaches == before.failed_approaches
    # Superseding it is how a summariser may retire one.
    retired = Superseded(about="tests", value="1 failed", from_step=2, until_step=5, by="(no longer tracked)")
    after = merged(before, WorkingMemory(superseded=[retired]), step=5)
    assert after.facts == [] and after.superseded == [retired]


def test_the_same_value_again_holds_since_it_was_first_seen_and_undated_facts_get_the_fold_step():
    before = WorkingMemory(facts=[fact("branch", "main", 1, "c1")])
    after = merged(before, WorkingMemory(facts=[fact("branch", "main", 7, "c7"), fact("venv", ".venv")]), step=8)
    assert after.facts == [fact("branch", "main", 1, "c1"), fact("venv", ".venv", 8)]
    assert after.superseded == []


def test_the_prompt_shows_superseded_values_one_line_each_after_the_current_memory():
    memory = merged(
        WorkingMemory(facts=[fact("timeout", "30", 3)]), WorkingMemory(facts=[fact("timeout", "60", 9)]), step=9
    )
    text = memory_text(memory, 2, (1, 9))
    current, old = text.split(SUPERSEDED_HEADER)
    assert '"value": "60"' in current and '"30"' not in current.replace('"supersedes": "30"', "")
    assert old.strip() == '- timeout: "30", held from step 3 until step 9, superseded by "60"'
    # An append-layout delta does not list the superseded fact as removed: it lists it as superseded.
    delta = delta_text(WorkingMemory(facts=[fact("timeout", "30", 3)]), memory, 2, (4, 9))
    assert '"removed"' not in delta and delta.endswith('superseded by "60"')


def test_a_memory_without_facts_renders_as_it_always_did():
    memory = WorkingMemory(goal="g", plan=["a"])
    assert memory_text(memory, 1).splitlines()[1:] == [
        "{",
        ' "artifacts": [],',
        ' "decisions": [],',
        ' "environment": {},',
        ' "failed_approaches": [],',
        ' "goal": "g",',
        ' "open_questions": [],',
        ' "plan": [',
        '  "a"',
        " ],",
        ' "steps": []',
        "}",
    ]


FACTS = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xyz")), max_size=4)


@given(folds=st.lists(FACTS, max_size=6))
def test_no_value_is_ever_lost_and_each_thing_has_one_current_value(folds):
    memory, seen = WorkingMemory(), set()
    for step, facts in enumerate(folds, 1):
        reply = WorkingMemory(facts=[fact(about, value) for about, value in dict(facts).items()])
        memory = merged(memory, reply, step)
        seen |= {(f.about, f.value) for f in reply.facts}
        abouts = [f.about for f in memory.facts]
        assert len(abouts) == len(set(abouts))
        kept = {(f.about, f.value) for f in memory.facts} | {(s.about, s.value) for s in memory.superseded}
        assert seen <= kept
        for s in memory.superseded:
            assert s.from_step is not None and s.until_step is not None and s.from_step <= s.until_step
