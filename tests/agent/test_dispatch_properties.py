"""The dispatcher is total: for any reply, one observation per call id, in order, and no exception, whatever a tool
raises or returns; each observation is journaled and reads back."""

from __future__ import annotations

import json
import string
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from agent.dispatch import Dispatcher, dispatch
from agent.journal.store import scan
from core.events import ToolObserved
from core.policy import DispatchPolicy, HarnessPolicy
from core.types import ToolCall
from memory.truncate import head_tail
from sandboxes.base import SandboxDead
from sandboxes.local import LocalSandbox
from tests.agent.helpers import new_journal
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult

BEHAVIOURS = [
    "ok",
    "raise",
    "timeout_raise",
    "timeout_result",
    "nonzero",
    "domain",
    "dead",
    "bad_return",
    "exits",
    "bad_exit_code",
    "bad_submission",
    "submits",
]
# Any text, lone surrogates included: an error about a file whose name is not UTF-8 holds one (os.fsdecode's
# surrogateescape), and so does the output of a tool that decoded a JSON escape like "\ud800".
ID_CHARACTERS = st.sampled_from(string.ascii_letters + string.digits + "_-./αβ")
# Long ids made of a few drawn characters repeated: hypothesis would spend its whole budget drawing each one.
long_ids = st.builds(
    lambda seed, n: (seed * n)[:n], st.text(ID_CHARACTERS, min_size=1, max_size=4), st.integers(200, 300)
)
odd_text = st.text(st.one_of(st.characters(), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)), max_size=30)


class XArgs(BaseModel):
    x: int


def make_tool(name: str, effect: Effect, behaviour: str, text: str, executed: list[str]) -> Tool:
    def run(args: XArgs, ctx: ToolContext) -> ToolResult:
        executed.append(name)
        if behaviour == "raise":
            raise FileNotFoundError(2, "No such file or directory", text)
        if behaviour == "timeout_raise":
            raise TimeoutError(text)
        if behaviour == "timeout_result":
            return ToolResult("partial", ok=False, timed_out=True)
        if behaviour == "nonzero":
            return ToolResult("failed", ok=False, exit_code=2)
        if behaviour == "domain":
            return ToolResult("illegal move", ok=False, domain_error=True)
        if behaviour == "dead":
            raise SandboxDead(text)
        if behaviour == "bad_return":
            return None  # a buggy tool: the dispatcher must still produce an observation
        if behaviour == "exits":
            raise SystemExit(2)  # what argparse does with arguments it refuses
        if behaviour == "bad_exit_code":
            return ToolResult(text, ok=False, exit_code=args.x + 0.5)
        if behaviour == "bad_submission":
            return ToolResult(text, submission=args.x)
        if behaviour == "submits":
            return ToolResult(text, submission=text)
        return ToolResult(text + "x" * args.x)

    return Tool(name=name, summary="s", description="d", args=XArgs, effect=effect, run=run)


tool_specs = st.lists(
    st.tuples(st.sampled_from([Effect.READ, Effect.WRITE]), st.sampled_from(BEHAVIOURS), odd_text),
    min_size=1,
    max_size=5,
)
arguments = st.one_of(
    st.integers(0, 20000).map(lambda x: json.dumps({"x": x})),
    st.just(json.dumps({"x": "not a number"})),
    st.just("{not json"),
    st.just(""),
    st.just("[1, 2]"),
    st.text(max_size=30),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(json.dumps),
)


@given(
    specs=tool_specs,
    # A call's id is whatever the model sent: short, long, or not ASCII.
    raw_calls=st.lists(
        st.tuples(st.integers(0, 6), st.text(max_size=8), arguments, st.text(ID_CHARACTERS, max_size=4) | long_ids),
        max_size=8,
        unique_by=lambda call: call[3],
    ),
    mode=st.sampled_from(["first_write_wins", "all", "one_call_only"]),
)
# An id too long for a file's name, in the name of the traceback kept for a tool that raised.
@example(specs=[(Effect.READ, "raise", "")], raw_calls=[(0, "", "{}", "0" * 240)], mode="all")
# Two ids that differ only in characters a file's name leaves out, each with an output cut and kept in full.
@example(
    specs=[(Effect.READ, "ok", "")],
    raw_calls=[(0, "", json.dumps({"x": 20000}), "α"), (0, "", json.dumps({"x": 19999}), "β")],
    mode="all",
)
def test_dispatcher_is_total(specs, raw_calls, mode):
    executed: list[str] = []
    tools = [make_tool(f"t{i}", eff, beh, text, executed) for i, (eff, beh, text) in enumerate(specs)]
    registry = Registry.of(tools)
    # Names index into the registry or are junk the model made up.
    calls = [
        ToolCall(id=call_id, name=f"t{idx}" if idx < len(tools) else junk, arguments=args)
        for idx, junk, args, call_id in raw_calls
    ]
    policy = HarnessPolicy(dispatch=DispatchPolicy(parallel=mode))
    with tempfile.TemporaryDirectory() as tmp:
        journal = new_journal(Path(tmp))
        ctx = ToolContext(sandbox=LocalSandbox(Path(tmp) / "w"), timeout_s=1)
        done = dispatch(Dispatcher(tools=registry, ctx=ctx, policy=policy, journal=journal), calls, 1)
        journal.close()
        found = scan(journal.dir)
        for o in done.observations:  # a cut observation's full text is kept, each in a file of its own
            if o.truncation is not None:
                kept = (journal.dir / o.truncation.artifact).read_text()
                assert head_tail(kept, policy.truncation.for_tool(o.tool), o.truncation.artifact)[0] == o.text

    assert found.damage is None and not found.skipped
    assert [e.observation for e in found.events if isinstance(e, ToolObserved)] == done.observations

    assert [o.call_id for o in done.observations] == [c.id for c in calls]
    assert all(o.tool == c.name for o, c in zip(done.observations, calls))
    effects = {t.name: t.effect for t in tools}
    ran = [o for o in done.observations if o.executed]
    assert [o.tool for o in ran] == executed  # executed flags tell the truth
    if mode == "first_write_wins":
        writes = [i for i, o in enumerate(done.observations) if o.executed and effects.get(o.tool) is Effect.WRITE]
        if writes:
            later = done.observations[writes[0] + 1 :]
            assert not any(o.executed for o in later)
            assert all(o.status == "rejected" for o in later)
    if mode == "one_call_only":
        assert not any(o.executed for o in done.observations[1:])
        assert all(o.status == "rejected" for o in done.observations[1:])
