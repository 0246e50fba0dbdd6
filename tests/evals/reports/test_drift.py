"""The drift findings on constructed runs whose counts are known: re-reads of unchanged content (and those after a
compaction), retries of a recorded failed approach, repeated identical actions, steps with no call, retries after
a permanent failure; the tokens each spent; and the drift table over runs of known outcomes."""

from __future__ import annotations

import json

from crafted import act, compaction, reply

from agent.models.base import estimate_tokens
from core.types import ToolCall
from evals.reports.actions import may_write, reads
from evals.reports.detectors import BY_NAME, DRIFT, detect
from evals.reports.drift_summary import drift_markdown, drift_rows
from evals.reports.steps import steps_of

FILE = "\n".join(f"line {i} of a.py" for i in range(1, 9))  # eight lines
EDITED = FILE.replace("line 3", "LINE 3")
COMPLETION = 50  # crafted replies' completion tokens without reasoning


def found(name: str, events: list) -> list:
    return BY_NAME[name].find(steps_of(events))


def spent(text: str) -> int:
    return COMPLETION + estimate_tokens(text)


def sed(lines: str) -> dict:
    return {"command": f"sed -n '{lines}p' a.py"}


def window(first: int, last: int, text: str = FILE) -> str:
    return "\n".join(text.splitlines()[first - 1 : last])


def reading_run() -> list:
    """Eight steps: three re-reads, one of them after a compaction; reads of new lines and of changed content
    are not."""
    return [
        *act(1, "read_file", {"path": "a.py"}, FILE),
        *act(2, "shell", sed("2,4"), window(2, 4)),  # 1: lines step 1 showed
        *act(3, "shell", {"command": "ls"}, "a.py\nb.py\nc.py"),
        *act(4, "write_file", {"path": "a.py", "content": EDITED}, "wrote a.py"),
        *act(5, "read_file", {"path": "a.py"}, EDITED),  # line 3 changed: shows something new
        *act(6, "shell", {"command": "cat a.py"}, EDITED),  # 2: the same as step 5
        compaction(6),
        *act(7, "shell", {"command": "nl a.py"}, "\n".join(f"  {i}\t{x}" for i, x in enumerate(EDITED.split("\n")))),
        *act(8, "read_file", {"path": "a.py"}, window(1, 6, EDITED)),  # 3: after the compaction
    ]


def test_re_reads_are_reads_that_show_no_line_the_model_had_not_seen():
    findings = found("re_read", reading_run())
    assert [f.step for f in findings] == [2, 6, 8]
    assert [f.after_compaction for f in findings] == [False, False, True]
    assert "step 1's read of a.py" in findings[0].detail and "compaction after step 6" in findings[2].detail
    assert [f.tokens for f in findings] == [spent(window(2, 4)), spent(EDITED), spent(window(1, 6, EDITED))]


def test_a_read_of_too_few_lines_or_a_failed_read_is_no_re_read():
    events = [
        *act(1, "read_file", {"path": "a.py"}, FILE),
        *act(2, "read_file", {"path": "a.py"}, "line 1 of a.py"),  # one line: no reading to speak of
        *act(3, "read_file", {"path": "a.py"}, FILE, status="error", kind="tool_error"),
        *act(4, "read_file", {"path": "b.py"}, FILE),  # another file
    ]
    assert found("re_read", events) == []


def failing_run() -> list:
    """Two retries of a failed call with nothing written between, one after a write (not a retry), and one of a
    failed approach the working memory records."""
    fail = {"status": "error", "kind": "nonzero_exit"}
    return [
        *act(1, "shell", {"command": "python t.py"}, "Traceback: boom", **fail),
        *act(2, "shell", {"command": "grep -n boom t.py"}, "3: boom()"),  # only looks
        *act(3, "shell", {"command": "python t.py"}, "Traceback: boom!", **fail),  # 1
        *act(4, "shell", {"command": "python t.py"}, "Traceback: boom!!", **fail),  # 2
        *act(5, "write_file", {"path": "t.py", "content": "print(1)"}, "wrote t.py"),
        *act(6, "shell", {"command": "python t.py"}, "Traceback: other", **fail),  # after a write: a new try
        *act(7, "shell", {"command": "pip install frobnicate"}, "no such package", **fail),
        *act(8, "write_file", {"path": "notes.md", "content": "try pip"}, "wrote notes.md"),
        compaction(8, memory={"failed_approaches": [{"approach": "shell pip install frobnicate", "why": "none"}]}),
        *act(9, "shell", {"command": "pip install frobnicate"}, "no such package", **fail),  # 3: in the memory
    ]


def test_retries_of_a_recorded_failed_approach():
    findings = found("retry_failed_approach", failing_run())
    assert [f.step for f in findings] == [3, 4, 9]
    assert "failed at step 1 (nonzero_exit)" in findings[0].detail and "failed at step 3" in findings[1].detail
    assert "the working memory records: shell pip install frobnicate" in findings[2].detail
    assert findings[0].tokens == spent("Traceback: boom!")


def test_a_memorys_failed_approach_tried_again_after_a_write_is_a_new_attempt():
    events = [
        *act(1, "shell", {"command": "pip install frobnicate"}, "no", status="error", kind="nonzero_exit"),
        compaction(1, memory={"failed_approaches": [{"approach": "shell pip install frobnicate"}]}),
        *act(2, "write_file", {"path": "requirements.txt", "content": "frobnicate"}, "wrote"),
        *act(3, "shell", {"command": "pip install frobnicate"}, "ok"),
    ]
    assert found("retry_failed_approach", events) == []


def test_repeated_actions_no_calls_and_permanent_retries_spend_their_tokens():
    events = [
        *act(1, "shell", {"command": "ls"}, "a.py"),
        *act(2, "shell", {"command": "ls"}, "a.py"),  # repeated
        reply(3, text="Thinking."),  # no call
        *act(4, "shell", '{"command": "ls', "bad arguments", status="error", kind="bad_json"),
        *act(5, "shell", '{"command": "ls', "bad arguments", status="error", kind="bad_json"),  # permanent retry
    ]
    by_name = {name: found(name, events) for name in DRIFT}
    assert {n: [f.step for f in fs] for n, fs in by_name.items()} == {
        "re_read": [],
        "retry_failed_approach": [],
        "repeated_action": [2],
        "no_tool_call": [3],
        "retry_after_permanent_failure": [5],
    }
    assert by_name["repeated_action"][0].tokens == spent("a.py")
    assert by_name["no_tool_call"][0].tokens == COMPLETION  # no output, no note in a crafted step
    assert by_name["retry_after_permanent_failure"][0].tokens == spent("bad arguments")


def test_the_drift_table_counts_runs_findings_and_tokens_by_outcome():
    runs = [
        (detect(steps_of(reading_run())), True),  # 3 re-reads
        (detect(steps_of(failing_run())), False),  # 3 retries
        (detect(steps_of(act(1, "shell", {"command": "ls"}, "a.py"))), False),  # nothing
    ]
    rows = {r.detector.name: r.cells for r in drift_rows(runs)}
    assert list(rows) == list(DRIFT)
    reread, retry = rows["re_read"], rows["retry_failed_approach"]
    assert (reread["all"].runs, reread["all"].hit, reread["all"].findings, reread["all"].after_compaction) == (
        3,
        1,
        3,
        1,
    )
    assert reread["resolved"].per_run == 3.0 and reread["not resolved"].per_run == 0.0
    assert retry["not resolved"].share == 0.5 and retry["not resolved"].per_run == 1.5
    assert retry["all"].tokens == sum(f.tokens for f in runs[1][0] if f.detector == "retry_failed_approach")
    table = "\n".join(drift_markdown(drift_rows(runs)))
    assert "| Re-reads of unchanged content (1 after a compaction) | 33% (100% / 0%) | 1.00 (3.00 / 0.00) |" in table


def test_ungraded_runs_give_one_column():
    rows = drift_rows([(detect(steps_of(reading_run())), None)])
    assert list(rows[0].cells) == ["all"]


def call(name: str, **args) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=json.dumps(args))


def test_what_a_call_reads_and_whether_it_may_write():
    shell = {
        "cat a.py b.py": (("a.py", "b.py"), False),
        "cd /testbed && nl -ba src/x.py | sed -n '10,20p'": (("src/x.py",), False),
        "head -n 20 ./docs/y.md": (("docs/y.md",), False),
        "grep -rn foo . | head": ((), False),
        "git diff && git status": ((), False),
        "ls 2>/dev/null": ((), False),
        "sed -i 's/a/b/' x.py": ((), True),
        "cat <<'EOF' > new.py\nprint(1)\nEOF": ((), True),
        "echo hi > out.txt": ((), True),
        "git checkout x.py": ((), True),
        "python t.py": ((), True),
        "cat 'unbalanced": ((), True),
    }
    for command, (files, writes) in shell.items():
        assert (reads(call("bash", command=command)), may_write(call("bash", command=command))) == (files, writes), (
            command
        )
    assert reads(call("Read", file_path="/a/b.py")) == ("/a/b.py",) and not may_write(call("Read", file_path="x"))
    assert reads(call("str_replace_editor", command="view", path="x.py")) == ("x.py",)
    assert may_write(call("str_replace_editor", command="str_replace", path="x.py")) and may_write(call("Edit"))
    assert not may_write(call("Grep", pattern="x")) and not may_write(call("get_board"))
