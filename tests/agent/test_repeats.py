"""The repeat stop rule compares normalised text: a failing call repeated while its error
message moves from line to line is still a loop (real loop, local sandbox)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from tests.agent.helpers import call, events

# The same command every time; it keeps a counter, so bash reports the missing command on
# line 4, then 5, 6, 7: the messages differ only by their line numbers.
MOVING_LINE = (
    'n=$(cat .n 2>/dev/null || echo 3); echo $((n + 1)) > .n; bash -c "$(yes : | head -n "$n")\nslugify hello"'
)


def test_five_identical_failing_calls_with_moving_line_numbers_stop_as_repeats(tmp_path):
    summary, run_dir = start(
        RunSpec(
            Task(prompt="slugify hello"),
            ScriptedModel([call("shell", command=MOVING_LINE)] * 5),
            HarnessPolicy(),
            tmp_path,
        )
    )
    texts = [e["observation"]["text"] for e in events(run_dir) if e["type"] == "tool_observed"]
    assert [t.splitlines()[0] for t in texts] == [f"bash: line {n}: slugify: command not found" for n in (4, 5, 6)]
    assert summary.stop_reason == "no_progress" and "stop.max_repeats" in summary.message and summary.steps == 3
