"""A run_code program's calls go through the dispatcher like direct calls: the same errors, journaled under the
program's call, each once; what the model is offered in each dispatch mode; bad programs in a whole run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.dispatch import Dispatcher, dispatch
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.program_calls import offer, programs
from agent.recovery.reconcile import Recovered
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, start
from core.errors import HarnessError
from core.events import InnerIntent, InnerObserved, ProgramFiles, ToolIntent, ToolObserved
from core.policy import ApprovalPolicy, CodeLimits, DispatchPolicy, HarnessPolicy
from core.types import ToolCall
from sandboxes.local import LocalSandbox
from tests.agent.helpers import new_journal
from tools.base import ToolContext
from tools.builtin import standard_tools

CODE = HarnessPolicy(dispatch=DispatchPolicy(mode="code"))


@pytest.fixture
def env(tmp_path):
    journal = new_journal(tmp_path / "runs")
    yield journal, LocalSandbox(tmp_path / "work")
    journal.close()


def dispatcher(env, policy=CODE) -> Dispatcher:
    journal, sandbox = env
    offered, callable_ = offer(standard_tools(), policy)
    return Dispatcher(
        tools=offered,
        ctx=ToolContext(sandbox=sandbox, timeout_s=10),
        policy=policy,
        journal=journal,
        programs=programs(callable_) if callable_ is not None else None,
    )


def code(i: int, program: str) -> ToolCall:
    return ToolCall(id=f"c{i}", name="run_code", arguments=json.dumps({"code": program}))


def test_what_each_mode_offers():
    tools = standard_tools()
    assert offer(tools, HarnessPolicy()) == (tools, None)
    offered, callable_ = offer(tools, CODE)
    assert offered.names() == ["run_code", "submit"]
    assert callable_ is not None and "submit" not in callable_.names() and "write_file" in callable_.names()
    offered, _ = offer(tools, HarnessPolicy(dispatch=DispatchPolicy(mode="both")))
    assert offered.names() == sorted([*tools.names(), "run_code"])
    kept = HarnessPolicy(
        dispatch=DispatchPolicy(mode="code", code=CodeLimits(direct_only=["write_file", "submit"])),
        approval=ApprovalPolicy(per_tool={"shell": "always"}),
    )
    offered, callable_ = offer(tools, kept)
    assert offered.names() == ["run_code", "shell", "submit", "write_file"]  # direct-only, and what waits for a person
    assert callable_ is not None and {"shell", "write_file"}.isdisjoint(callable_.names())
    assert "write_file(" not in offered.tools["run_code"].description  # the model is shown what a program can call
    assert "- read_file(*, path: str" in offered.tools["run_code"].description


def test_a_programs_bad_call_raises_the_error_a_direct_call_gets(env):
    d = dispatcher(env)
    [direct] = dispatch(
        Dispatcher(tools=standard_tools(), ctx=d.ctx, policy=HarnessPolicy(), journal=d.journal),
        [ToolCall(id="d1", name="read_file", arguments=json.dumps({"path": "x", "start_line": "first"}))],
        1,
    ).observations
    [obs] = dispatch(d, [code(1, "read_file(path='x', start_line='first')")], 2).observations
    assert direct.error_kind == "invalid_args"
    assert f"ToolError: {direct.text}" in obs.text
    [inner] = [e for e in read_events(d.journal.dir) if isinstance(e, InnerObserved)]
    assert inner.observation.text == direct.text and inner.observation.error_kind == "invalid_args"


def test_a_programs_calls_are_journaled_under_it_each_once(env):
    d = dispatcher(env)
    program = (
        "write_file(path='a.txt', content='1')\nprint(read_file(path='a.txt'))\nwrite_file(path='b.txt', content='2')"
    )
    [obs] = dispatch(d, [code(1, program)], 1).observations
    assert obs.status == "ok" and "created a.txt, b.txt" in obs.text
    events = read_events(d.journal.dir)
    kinds = [(e.type, getattr(e, "call_id", None) or e.observation.call_id) for e in events]
    assert kinds == [
        ("tool_intent", "c1"),
        ("program_files", "c1"),
        ("inner_intent", "c1.1"),
        ("inner_observed", "c1.1"),
        ("inner_observed", "c1.2"),  # a read: no intent
        ("inner_intent", "c1.3"),
        ("inner_observed", "c1.3"),
        ("tool_observed", "c1"),
    ]
    intent = next(e for e in events if isinstance(e, InnerIntent))
    assert (
        intent.parent == "c1" and intent.tool == "write_file" and intent.arguments == {"path": "a.txt", "content": "1"}
    )


def test_a_program_run_again_after_a_crash_is_answered_from_the_journal(env):
    """The process died inside the program after its first write: the journal holds that call, so the program run
    again makes only the second write, and its account is the one the uninterrupted program would have given."""
    d = dispatcher(env)
    journal, sandbox = env
    program = "write_file(path='n.txt', content='1')\nwrite_file(path='m.txt', content='2')\nprint('done')"
    dispatch(d, [code(1, program)], 1)
    events = read_events(journal.dir)
    first = next(e for e in events if isinstance(e, InnerObserved))
    files = next(e for e in events if isinstance(e, ProgramFiles))
    assert (Path(sandbox.workdir) / "n.txt").read_text() == "1"  # its first write, as the dead process had made it
    (Path(sandbox.workdir) / "m.txt").unlink()  # and not the second
    recovered = Recovered(
        interrupted={"c2": ToolIntent(call_id="c2", tool="run_code", arguments={}, idempotency_key="k")},
        inner={
            "c2.1": first.model_copy(
                update={"parent": "c2", "observation": first.observation.model_copy(update={"call_id": "c2.1"})}
            )
        },
        files={"c2": files.model_copy(update={"call_id": "c2"})},
    )
    before = len(read_events(journal.dir))
    [obs] = dispatch(d, [code(2, program)], 2, recovered).observations
    made = [e for e in read_events(journal.dir)[before:] if isinstance(e, InnerIntent)]
    assert [e.call_id for e in made] == ["c2.2"]  # the first write was not made again
    assert obs.status == "ok" and "done" in obs.text and "created m.txt, n.txt" in obs.text


def test_a_program_that_asks_otherwise_after_a_crash_is_stopped(env):
    d = dispatcher(env)
    dispatch(d, [code(1, "write_file(path='x.txt', content='1')")], 1)
    first = next(e for e in read_events(d.journal.dir) if isinstance(e, InnerObserved))
    recovered = Recovered(inner={"c1.1": first})
    [obs] = dispatch(d, [code(1, "write_file(path='y.txt', content='1')")], 2, recovered).observations
    assert "did not make the same calls" in obs.text and "write_file" in obs.text


def test_a_direct_only_tool_is_refused_to_a_program(env):
    d = dispatcher(env)
    host = d.programs(d, code(1, ""), 1, None)
    reply = host.call("submit", json.dumps({"answer": "x"}))
    assert not reply.ok and "cannot be called from a program" in reply.text
    reply = host.call("no_such_tool", "{}")
    assert not reply.ok and "Unknown tool 'no_such_tool'" in reply.text


def test_code_mode_needs_a_sandbox(tmp_path):
    model = ScriptedModel([ScriptedReply(text="done")])
    with pytest.raises(HarnessError, match="run_code programs run in the run's sandbox, and this run has none"):
        start(RunSpec(Task(prompt="x"), model, CODE, tmp_path / "runs", sandbox=SandboxSpec(kind="none")))
    assert not (tmp_path / "runs").exists()  # refused before any run folder is made


BAD = [
    "x = = 1",
    "def f():\n    raise ValueError('boom')\nf()",
    "while True:\n    pass",
    "while True:\n    print('y' * 100)",
    "read_file(path='a.txt', start_line=0)",
    "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
    "print(open('/etc/hostname').read())",
    "for i in range(5):\n    read_file(path='a.txt')",
]


@pytest.mark.parametrize("box", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_bad_programs_each_give_one_observation_and_the_run_goes_on(tmp_path, box):
    # The limit is each program's, the good one's too: 6 s leaves its two calls room on a loaded machine.
    policy = HarnessPolicy(
        dispatch=DispatchPolicy(mode="code", code=CodeLimits(timeout_s=6, max_calls=3, max_output_chars=2000))
    )
    replies = [
        ScriptedReply.model_validate({"tool_calls": [{"name": "run_code", "arguments": {"code": c}}]}) for c in BAD
    ]
    good = "write_file(path='a.txt', content='fine')\nprint(read_file(path='a.txt'))"
    replies += [
        ScriptedReply.model_validate({"tool_calls": [{"name": "run_code", "arguments": {"code": good}}]}),
        ScriptedReply.model_validate({"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}),
    ]
    policy = policy.model_copy(update={"errors": policy.errors.model_copy(update={"max_consecutive_failures": 20})})
    summary, run_dir = start(
        RunSpec(
            Task(prompt="x", files={"a.txt": "x"}),
            ScriptedModel(replies),
            policy,
            tmp_path,
            sandbox=SandboxSpec(kind=box),
        )
    )
    assert summary.stop_reason == "submitted"
    observed = [e.observation for e in read_events(run_dir) if isinstance(e, ToolObserved)]
    assert len(observed) == len(BAD) + 2
    said = [o.text for o in observed]
    assert "line 1" in said[0] and "SyntaxError" in said[0]
    assert "ValueError: boom" in said[1] and "harness" not in said[1].split("[calls")[0]
    assert "time limit of 6 s" in said[2] and observed[2].status == "timeout"
    assert "printed more than 2000 characters" in said[3]
    assert "ToolError: Invalid arguments for read_file: start_line" in said[4]
    assert "has no network" in said[5]
    assert "may not read /etc/hostname" in said[6]
    assert "more than 3 tool calls" in said[7]
    assert observed[8].status == "ok" and "1\tfine" in said[8]
