"""The dispatcher turns every kind of failure into the right observation."""

from __future__ import annotations

import json
import os
import time

import pytest

from agent.dispatch import Dispatcher, dispatch
from agent.journal.store import read_events
from core.context_policy import TruncationPolicy
from core.events import ToolIntent, ToolObserved
from core.policy import ApprovalPolicy, DispatchPolicy, HarnessPolicy
from core.types import ToolCall
from sandboxes.local import LocalSandbox
from tests.agent.helpers import new_journal
from tools.base import Effect, FreeArgs, Registry, Tool, ToolContext
from tools.builtin import standard_tools


@pytest.fixture
def env(tmp_path):
    journal = new_journal(tmp_path / "runs")
    sandbox = LocalSandbox(tmp_path / "work")
    yield journal, ToolContext(sandbox=sandbox, timeout_s=2)
    journal.close()


def run(env, calls, policy=HarnessPolicy(), approve=None):
    journal, ctx = env
    return dispatch(
        Dispatcher(tools=standard_tools(), ctx=ctx, policy=policy, journal=journal, approve=approve), calls, 1
    )


def c(i, tool, **args):
    return ToolCall(id=f"c{i}", name=tool, arguments=json.dumps(args))


def test_unknown_tool_lists_the_available_names(env):
    [obs] = run(env, [c(1, "rm_rf")]).observations
    assert obs.status == "error" and obs.error_kind == "unknown_tool"
    assert "'rm_rf'" in obs.text and "read_file" in obs.text and "shell" in obs.text


def test_bad_json_and_invalid_arguments_name_the_problem(env):
    bad_json, wrong_type, missing = run(
        env,
        [
            ToolCall(id="a", name="shell", arguments="{command: ls"),
            c(2, "read_file", path="x", start_line="first"),
            c(3, "write_file", path="x"),
        ],
        HarnessPolicy(dispatch=DispatchPolicy(parallel="all")),
    ).observations
    assert bad_json.error_kind == "bad_json" and "not valid JSON" in bad_json.text
    assert wrong_type.error_kind == "invalid_args" and "start_line" in wrong_type.text
    assert missing.error_kind == "invalid_args" and "content" in missing.text and "Field required" in missing.text


def test_nonzero_exit_and_timeout(env):
    policy = HarnessPolicy(dispatch=DispatchPolicy(parallel="all"))
    failed, slow, after = run(
        env,
        [
            c(1, "shell", command="echo oops; exit 3"),
            c(2, "shell", command="sleep 30"),
            c(3, "shell", command="echo fine"),
        ],
        policy,
    ).observations
    assert (
        failed.status == "error"
        and failed.error_kind == "nonzero_exit"
        and failed.exit_code == 3
        and "oops" in failed.text
    )
    assert slow.status == "timeout" and slow.duration_s < 10
    assert after.status == "ok" and after.text.strip() == "fine"


def test_a_file_the_sandbox_refuses_is_one_line_of_the_models_making_without_a_traceback(env):
    journal, _ = env
    [obs] = run(env, [c(1, "read_file", path="missing.txt")]).observations
    assert (obs.status, obs.error_kind, obs.text) == ("error", "tool_error", "no such file or directory: missing.txt")
    [event] = [e for e in read_events(journal.dir) if isinstance(e, ToolObserved)]
    assert event.traceback is None and not list((journal.dir / "artifacts").glob("*traceback*"))


def test_a_file_tool_honours_the_policys_timeout(env):
    journal, ctx = env
    os.mkfifo(os.path.join(ctx.sandbox.workdir, "pipe"))
    start = time.monotonic()
    [obs] = run(env, [c(1, "read_file", path="pipe")]).observations  # the context's timeout_s is 2
    assert time.monotonic() - start < 5
    assert (obs.status, obs.error_kind) == ("timeout", "timeout")
    assert obs.text.startswith("timed out after 2 s reading pipe: it is a named pipe (FIFO)")


def test_a_tool_that_raises_is_a_harness_fault_whose_traceback_goes_to_the_journal_and_artifacts_only(env):
    journal, ctx = env

    def buggy(args, ctx):
        return {}["/home/someone/harness/tools/secret.py"]  # a bug, with a host path in its message

    tools = Registry.of([Tool("buggy", "a buggy tool", "a buggy tool", FreeArgs, Effect.READ, buggy)])
    [obs] = dispatch(
        Dispatcher(tools=tools, ctx=ctx, policy=HarnessPolicy(), journal=journal), [c(1, "buggy")], 3
    ).observations
    assert (obs.status, obs.error_kind) == ("error", "tool_raised")
    assert obs.text == (
        "buggy failed with KeyError: a fault of the harness, not of your call; the harness kept the details. "
        "Try again, or reach the same end another way."
    )
    [event] = [e for e in read_events(journal.dir) if isinstance(e, ToolObserved)]
    assert "Traceback" in event.traceback and "/home/someone" in event.traceback
    artifact = journal.dir / "artifacts" / "step00003-c1-traceback.txt"
    assert artifact.read_text() == event.traceback


def test_a_closed_sandbox_is_reported_as_dead(env):
    journal, ctx = env
    ctx.sandbox.close()
    [obs] = run(env, [c(1, "shell", command="true")]).observations
    assert obs.error_kind == "sandbox_dead"


def test_first_write_wins_runs_reads_then_one_write(env):
    obs = run(
        env,
        [
            c(1, "find", name="*"),
            c(2, "write_file", path="a.txt", content="A"),
            c(3, "write_file", path="b.txt", content="B"),
            c(4, "find", name="*"),
        ],
    ).observations
    assert [o.status for o in obs] == ["ok", "ok", "rejected", "rejected"]
    assert "c2 (write_file)" in obs[2].text and "changed the world" in obs[2].text
    _, ctx = env
    assert ctx.sandbox.read_file("a.txt") == b"A"
    with pytest.raises(FileNotFoundError):
        ctx.sandbox.read_file("b.txt")


def test_a_failed_validation_does_not_close_the_reply(env):
    obs = run(env, [c(1, "write_file", path="a.txt"), c(2, "write_file", path="b.txt", content="B")]).observations
    assert [o.status for o in obs] == ["error", "ok"]


def test_one_call_only(env):
    obs = run(
        env,
        [c(1, "find", name="*"), c(2, "find", name="*")],
        HarnessPolicy(dispatch=DispatchPolicy(parallel="one_call_only")),
    ).observations
    assert [o.status for o in obs] == ["ok", "rejected"]
    assert "one tool call per reply" in obs[1].text


def test_intent_is_journaled_before_a_write_and_not_for_a_read(env):
    journal, _ = env
    run(env, [c(1, "find", name="*"), c(2, "write_file", path="a.txt", content="A")])
    kinds = [(type(e).__name__, getattr(e, "call_id", None) or e.observation.call_id) for e in read_events(journal.dir)]
    assert kinds == [("ToolObserved", "c1"), ("ToolIntent", "c2"), ("ToolObserved", "c2")]
    intent = next(e for e in read_events(journal.dir) if isinstance(e, ToolIntent))
    assert intent.arguments == {"path": "a.txt", "content": "A"} and len(intent.idempotency_key) == 16


def test_approval_refused_is_a_denied_observation(env):
    policy = HarnessPolicy(approval=ApprovalPolicy(approve="writes"))
    obs = run(
        env,
        [c(1, "find", name="*"), c(2, "write_file", path="a.txt", content="A")],
        policy,
        approve=lambda call, tool: False,
    ).observations
    assert [o.status for o in obs] == ["ok", "denied"]
    assert not obs[1].executed


def test_long_output_is_truncated_head_and_tail_with_the_full_text_stored(env):
    journal, _ = env
    policy = HarnessPolicy(truncation=TruncationPolicy(head_chars=100, tail_chars=50))
    [obs] = run(env, [c(1, "shell", command="seq 1 5000")], policy).observations
    full = "\n".join(str(i) for i in range(1, 5001)) + "\n"
    assert obs.text.startswith(full[:100]) and obs.text.endswith(full[-50:])
    assert obs.truncation.original_chars == len(full)
    assert f"{len(full) - 150} characters" in obs.text and obs.truncation.artifact in obs.text
    assert (journal.dir / obs.truncation.artifact).read_text() == full
