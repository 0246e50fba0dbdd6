"""Each detector on a crafted journal that has its pattern, and on one that lacks it."""

from __future__ import annotations

from crafted import act, compaction, model_failed, observed, reply

from evals.reports.detectors import BY_NAME, DETECTORS, detect
from evals.reports.steps import steps_of


def flagged(name: str, events: list, compactions=()) -> list[int]:
    return [f.step for f in BY_NAME[name].find(steps_of([*events, *compactions]))]


def clean_run() -> list:
    """A tidy trajectory: varied calls, all fine, steady growth, warm cache, modest reasoning."""
    return [
        *act(1, "shell", {"command": "ls"}, "a.py", prompt=1500, cached=0, reasoning="look", reasoning_tokens=200),
        *act(2, "read_file", {"path": "a.py"}, "print(1)", prompt=1800, cached=1400, reasoning_tokens=250),
        *act(
            3,
            "write_file",
            {"path": "a.py", "content": "print(2)"},
            "wrote",
            prompt=2100,
            cached=1750,
            reasoning_tokens=300,
        ),
        *act(4, "shell", {"command": "python a.py"}, "2", prompt=2400, cached=2050, reasoning_tokens=220),
        *act(5, "submit", {"answer": "done"}, "submitted", prompt=2700, cached=2350, reasoning_tokens=180),
    ]


def test_every_detector_has_a_name_and_a_one_line_explanation():
    assert len({d.name for d in DETECTORS}) == len(DETECTORS) == 12
    for d in DETECTORS:
        assert d.title and d.explanation and "\n" not in d.explanation


def test_a_clean_run_has_no_findings():
    assert detect(steps_of(clean_run())) == []


def test_no_tool_call():
    events = [
        *act(1, "shell", {"command": "ls"}),
        reply(2, text="I think it works."),
        *act(3, "submit", {"answer": "x"}),
    ]
    assert flagged("no_tool_call", events) == [2]
    assert flagged("no_tool_call", clean_run()) == []


def test_no_tool_call_says_when_the_reply_was_cut_off():
    finding = BY_NAME["no_tool_call"].find(steps_of([reply(1, text="Let me", finish="length")]))[0]
    assert "cut off" in finding.detail


def test_repeated_action_needs_the_same_call_and_the_same_result():
    events = [
        *act(1, "shell", {"command": "ls"}, "a.py"),
        *act(2, "shell", {"command": "cat a.py"}, "x"),
        *act(3, "shell", {"command": "ls"}, "a.py"),  # same call, same result: nothing learned
        *act(4, "shell", {"command": "pytest"}, "1 failed", "error", "nonzero_exit"),
        *act(5, "write_file", {"path": "a.py", "content": "y"}, "wrote"),
        *act(6, "shell", {"command": "pytest"}, "1 passed"),  # same call, new result: fine
    ]
    assert flagged("repeated_action", events) == [3]
    assert flagged("repeated_action", clean_run()) == []


def test_repeated_action_ignores_json_key_order():
    events = [
        *act(1, "read_file", {"path": "a", "start": 1}, "x"),
        *act(2, "read_file", {"start": 1, "path": "a"}, "x"),
    ]
    assert flagged("repeated_action", events) == [2]


def test_repeated_failing_calls_whose_messages_move_line_numbers_are_repeats():
    events = [
        e
        for n in range(1, 6)
        for e in act(
            n,
            "shell",
            {"command": "slugify hello"},
            f"bash: line {n + 3}: slugify: command not found\n\n[exit code 127]",
            "error",
            "nonzero_exit",
        )
    ]
    assert flagged("repeated_action", events) == [2, 3, 4, 5]
    moved = [
        *act(1, "shell", {"command": "pytest"}, "1 failed in 0.53s"),
        *act(2, "shell", {"command": "pytest"}, "2 failed in 0.61s"),
    ]
    assert flagged("repeated_action", moved) == []  # a different count of failures is news


def test_retry_after_permanent_failure():
    events = [
        *act(1, "edit", {"path": "a.py"}, "Unknown tool 'edit'.", "error", "unknown_tool"),
        *act(2, "edit", {"path": "a.py"}, "Unknown tool 'edit'.", "error", "unknown_tool"),
        *act(3, "shell", {"command": "make"}, "exit 2", "error", "nonzero_exit"),
        *act(4, "shell", {"command": "make"}, "ok"),  # a non-zero exit can change: not permanent
    ]
    assert flagged("retry_after_permanent_failure", events) == [2]
    assert flagged("retry_after_permanent_failure", clean_run()) == []


def test_retry_after_invalid_arguments_with_a_different_call_is_fine():
    events = [
        *act(1, "read_file", {"file": "a.py"}, "Invalid arguments", "error", "invalid_args"),
        *act(2, "read_file", {"path": "a.py"}, "x"),
    ]
    assert flagged("retry_after_permanent_failure", events) == []


def test_rejected_or_denied():
    events = [
        reply(1, ("write_file", {"path": "a", "content": "1"}), ("shell", {"command": "ls"})),
        observed(1, 0, "write_file", "wrote"),
        observed(1, 1, "shell", "Not run: call c1_0 changed the world", "rejected", "rejected"),
        *act(2, "shell", {"command": "rm -rf x"}, "Not run: the user refused", "denied", "denied"),
    ]
    assert flagged("rejected_or_denied", events) == [1, 2]
    assert flagged("rejected_or_denied", clean_run()) == []


def test_timeouts_of_tools_and_of_model_calls():
    events = [
        *act(
            1,
            "shell",
            {"command": "sleep 99"},
            "shell timed out",
            "timeout",
            "timeout",
        ),
        model_failed(2, "Request timed out after 60 s"),
        model_failed(2, "HTTP 529 overloaded"),
        *act(2, "shell", {"command": "ls"}),
    ]
    assert flagged("timeout", events) == [1, 2]
    assert flagged("timeout", clean_run()) == []


def test_truncated_compaction_reads_a_flag_or_a_finish_reason():
    events = clean_run()
    cut_flag = [compaction(2, tokens_before=9000, tokens_after=800, memory={"goal": "x"}, cut_off=True)]
    cut_reason = [compaction(3, memory={"goal": "notes"}, finish_reason="length")]
    whole = [compaction(2, tokens_before=9000, tokens_after=800, memory={"goal": "notes"}, finish_reason="stop")]
    assert flagged("truncated_compaction", events, cut_flag) == [2]
    assert flagged("truncated_compaction", events, cut_reason) == [3]
    assert flagged("truncated_compaction", events, whole) == []


def test_context_jump_both_ways_with_its_cause():
    events = [
        *act(1, "shell", {"command": "ls"}, prompt=3000),
        *act(2, "shell", {"command": "cat big.log"}, "x" * 40000, prompt=3300),
        *act(3, "shell", {"command": "ls"}, prompt=13300),  # the log arrived: a jump up
        *act(4, "shell", {"command": "pwd"}, prompt=13600),
        *act(5, "shell", {"command": "id"}, prompt=2000),  # a jump down
    ]
    findings = BY_NAME["context_jump"].find(steps_of(events))
    assert [f.step for f in findings] == [3, 5]
    assert "step 2's shell output added 40,000 characters" in findings[0].detail
    assert "shrank" in findings[1].detail
    assert flagged("context_jump", clean_run()) == []


def test_context_jump_from_a_compaction_says_so():
    events = [*act(1, "shell", {"command": "ls"}, prompt=20000), *act(2, "shell", {"command": "pwd"}, prompt=3000)]
    findings = BY_NAME["context_jump"].find(steps_of([*events, compaction(1, tokens_before=20000, tokens_after=3000)]))
    assert [f.step for f in findings] == [2] and "after a compaction" in findings[0].detail


def test_cache_break_when_an_append_only_prompt_lost_its_cache():
    events = [
        *act(1, "shell", {"command": "ls"}, prompt=2000, cached=0),
        *act(2, "shell", {"command": "pwd"}, prompt=2300, cached=1900),
        *act(3, "shell", {"command": "id"}, prompt=2600, cached=100),  # broke
        *act(4, "shell", {"command": "env"}, prompt=2900, cached=2550),
    ]
    assert flagged("cache_break", events) == [3]
    assert flagged("cache_break", clean_run()) == []


def test_no_cache_break_after_a_compaction_or_when_nothing_is_ever_cached():
    events = [
        *act(1, "shell", {"command": "ls"}, prompt=2000, cached=1500),
        *act(2, "shell", {"command": "pwd"}, prompt=2300, cached=0),
    ]
    assert flagged("cache_break", events, [compaction(1, tokens_before=2000, tokens_after=2000)]) == []
    uncached = [*act(1, "shell", {"command": "ls"}, prompt=2000), *act(2, "shell", {"command": "pwd"}, prompt=2300)]
    assert flagged("cache_break", uncached) == []


def test_reasoning_heavy():
    events = [
        *act(1, "shell", {"command": "ls"}, reasoning_tokens=300),
        *act(2, "shell", {"command": "pwd"}, reasoning_tokens=350),
        *act(3, "shell", {"command": "id"}, reasoning_tokens=5000),
        *act(4, "shell", {"command": "env"}, reasoning_tokens=280),
    ]
    assert flagged("reasoning_heavy", events) == [3]
    assert flagged("reasoning_heavy", clean_run()) == []


def test_reasoning_heavy_estimates_from_text_when_tokens_are_not_reported():
    events = [
        *act(1, "shell", {"command": "ls"}, reasoning="hmm " * 10),
        *act(2, "shell", {"command": "pwd"}, reasoning="z" * 40000),
    ]
    assert flagged("reasoning_heavy", events) == [2]
