"""The dispatcher: a total function from one reply's tool calls to observations.

Once a model has emitted a tool call it cannot be un-emitted, so every call id
gets exactly one observation, in the order emitted, whatever goes wrong: bad
JSON, an unknown tool, invalid arguments, a tool that raises or times out, a
dead sandbox, a refused approval, or a call the parallel-call policy rejects.
Only a failure to write the journal itself escapes, because acting without a
record would break the run's durability promise, and a stop a signal asked for
(core.interrupts), which leaves the call in flight as a crash would: the resumed
run settles it.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pydantic import TypeAdapter, ValidationError

from agent.call_host import JournaledCall
from agent.journal.store import Journal
from agent.recovery.approval import Decision, input_id, refusal_text
from agent.recovery.reconcile import Recovered, settle
from agent.run.state import Dispatched
from agent.sampling import Sampling
from core.events import InnerIntent, InputRequested, ToolIntent, ToolObserved
from core.interrupts import check
from core.policy import ApprovalPolicy, HarnessPolicy
from core.text_files import utf8_safe
from core.types import ErrorKind, Observation, Status, ToolCall, Truncation
from memory.truncate import head_tail
from sandboxes.base import SandboxDead
from tools.base import Effect, ProgramHost, Registry, Tool, ToolContext, ToolResult

Approver = Callable[[ToolCall, Tool], bool | Decision]  # a Decision carries the person's note to the refusal
# Who serves the calls of the program a tool runs (run_code's: agent.program_calls), given the call running it.
Programs = Callable[["Dispatcher", ToolCall, int, Recovered | None], ProgramHost]
# (observation, where its full text is kept: called only when it is cut) -> the observation the model sees
Cap = Callable[[Observation, Callable[[], str]], Observation]


@dataclass(frozen=True, kw_only=True)
class Dispatcher:
    """What the dispatcher needs from the run, the same at every step: the tools it validates calls against, how
    they run (`ctx`), the policy, the journal, who approves a gated call (None: nobody, so it is refused),
    `cap`, which cuts an observation too long for the model's window (agent.overflow.observation_cap), and
    `answers`, a person's answers to the questions a call's tool asked before (agent.recovery.approval.answers_for),
    `programs`, who serves the calls of a run_code program (None: a program can call nothing), and `sampling`,
    the run's model answering the sampling requests of a call's MCP server (None: refused)."""

    tools: Registry
    ctx: ToolContext
    policy: HarnessPolicy
    journal: Journal
    approve: Approver | None = None
    cap: Cap | None = None
    answers: Callable[[str], tuple[dict, ...]] | None = None  # a person's answers to a call's tool's questions
    programs: Programs | None = None
    sampling: Sampling | None = None


def dispatch(d: Dispatcher, calls: Sequence[ToolCall], step: int, recovered: Recovered | None = None) -> Dispatched:
    """One reply's calls at `step`; `recovered` is set when a resumed run finishes a step its crashed process
    began."""
    observations: list[Observation] = []
    submission: str | None = None
    closed: str | None = None  # once set, every later call is rejected with this reason
    for call in calls:
        prior = recovered.observed.get(call.id) if recovered is not None else None
        if closed is not None:
            obs, tb, result = observation(call, "rejected", closed, "rejected"), None, None
        elif prior is not None:  # journaled before the crash: taken as it was, nothing runs again
            obs, tb, result = (
                prior.observation,
                None,
                ToolResult(prior.observation.text, submission=prior.submission, rejects_later=prior.rejects_later),
            )
            closed = _closes_reply(d, call, obs, result)
        else:
            given = d.answers(call.id) if d.answers is not None else ()
            obs, tb, result = run_call(d, call, step, recovered, given)
            if result is not None and result.awaiting_input:
                return Dispatched(observations, submission, _asked(d, call, step, given, result))
            closed = _closes_reply(d, call, obs, result)
        if prior is None:
            obs = _truncate(d, obs, step)
            d.journal.append(
                ToolObserved(
                    step=step,
                    observation=obs,
                    traceback=tb,
                    submission=result.submission if result else None,
                    rejects_later=result.rejects_later if result else None,
                )
            )
        else:
            obs = prior.observation
        observations.append(obs)
        if result is not None and result.submission is not None and submission is None:
            submission = result.submission
    return Dispatched(observations, submission)


def _asked(d: Dispatcher, call: ToolCall, step: int, given: tuple, result: ToolResult) -> list[str]:
    """Journal the questions of a call that only a person can answer; their ids."""
    ids = []
    for n, question in enumerate(result.awaiting_input, len(given) + 1):
        ids.append(input_id(call.id, n))
        d.journal.append(InputRequested(step=step, call_id=call.id, input_id=ids[-1], question=question))
    return ids


def _closes_reply(d: Dispatcher, call: ToolCall, obs: Observation, result: ToolResult | None) -> str | None:
    mode = d.policy.dispatch.parallel
    if mode == "one_call_only":
        return "Not run: only one tool call per reply is allowed, and this reply's first call was taken. Send one call per reply."
    tool = d.tools.get(call.name)
    if mode == "first_write_wins" and obs.executed and tool is not None and tool.effect is Effect.WRITE:
        if result is not None and result.rejects_later is not None:
            return result.rejects_later  # the tool knows best what changed (a game: the opponent replied)
        return (
            f"Not run: call {call.id} ({call.name}) earlier in this reply changed the world, so this call "
            "was planned against a state that no longer holds. Look at the new state, then call again."
        )
    return None


def run_call(
    d: Dispatcher,
    call: ToolCall,
    step: int,
    recovered: Recovered | None,
    given: tuple[dict, ...] = (),
    tools: Registry | None = None,
    parent: str | None = None,
) -> tuple[Observation, str | None, ToolResult | None]:
    """One call, total: its observation, the traceback of a tool that raised, and the tool's result. `tools`: those
    the call may name (default: the dispatcher's); `parent`: the run_code call whose program made it, under which
    its write intent is journaled."""
    check()  # a safe point: a run asked to stop starts no call (core.interrupts)
    tools = tools if tools is not None else d.tools
    tool = tools.get(call.name)
    if tool is None:
        names = ", ".join(tools.names()) or "(none)"
        return (
            observation(call, "error", f"Unknown tool {call.name!r}. Available tools: {names}.", "unknown_tool"),
            None,
            None,
        )
    args, problem, kind = _parse_arguments(call, tool)
    if problem is not None:
        return observation(call, "error", problem, kind), None, None
    if needs_approval(tool, d.policy.approval):
        decision = d.approve(call, tool) if d.approve is not None else False
        if not decision:
            return observation(call, "denied", refusal_text(call.name, decision), "denied"), None, None
    program = d.programs(d, call, step, recovered) if d.programs is not None and tool.resumes else None
    # A call whose work went on as an MCP server's task when the run stopped follows that task: not run again.
    task = recovered.tasks.get(call.id) if recovered is not None else None
    host = JournaledCall(d.journal, step, call.id, call.name, task, d.sampling)
    ctx = replace(d.ctx, inputs=given, call_id=call.id, step=step, program=program, host=host)
    if tool.effect is not Effect.READ:
        ctx = replace(ctx, idempotency_key=idempotency_key(call))
    interrupted = recovered is not None and (
        call.id in recovered.interrupted if parent is None else call.id in recovered.inner_interrupted
    )
    if recovered is not None and interrupted and not tool.resumes and task is None:
        settled = settle(call, tool, args, ctx, d.policy.checkpoint, recovered)
        if isinstance(settled, Observation):
            return settled, None, None
        if settled is not None:  # its effect was already in place: report what the run reported
            return _from_result(call, settled, time.monotonic()), None, settled
    if tool.effect is not Effect.READ and task is None:
        arguments, key = args.model_dump(mode="json"), idempotency_key(call)
        d.journal.append(
            ToolIntent(step=step, call_id=call.id, tool=call.name, arguments=arguments, idempotency_key=key)
            if parent is None
            else InnerIntent(
                step=step, parent=parent, call_id=call.id, tool=call.name, arguments=arguments, idempotency_key=key
            )
        )
    check()  # and again between its intent and its run: stopped here, it is left as a crash would leave it
    start = time.monotonic()
    try:
        result = tool.run(args, ctx)
    except SandboxDead as e:
        return observation(call, "error", f"The sandbox is gone: {e}", "sandbox_dead", start), None, None
    except TimeoutError as e:
        return observation(call, "timeout", f"{call.name} timed out: {e.strerror or e}", "timeout", start), None, None
    except (Exception, SystemExit) as e:  # a tool bug must not kill the run (argparse's errors exit, for one)
        # The traceback names the harness's files and the host's paths: it is for whoever fixes the
        # bug (the journal and artifacts/), not for the model, which learns only that it was not its fault.
        tb = utf8_safe(traceback.format_exc())
        d.journal.store_artifact(f"step{step:05d}-{call.id}-traceback.txt", tb)
        text = (
            f"{call.name} failed with {type(e).__name__}: a fault of the harness, not of your call; "
            "the harness kept the details. Try again, or reach the same end another way."
        )
        return observation(call, "error", text, "tool_raised", start), tb, None
    if isinstance(result, str):  # a plain string is an ok result; anything else is a tool bug
        result = ToolResult(result)
    if not isinstance(result, ToolResult):
        text = f"{call.name} returned {type(result).__name__} instead of a result; this is a bug in the tool."
        return observation(call, "error", text, "tool_error", start), None, None
    try:
        result = _checked(result)
    except ValidationError as e:
        where = ", ".join(".".join(str(p) for p in err["loc"]) for err in e.errors())
        text = f"{call.name} returned a result whose {where} is not of its type; this is a bug in the tool."
        return observation(call, "error", text, "tool_error", start), None, None
    return _from_result(call, result, start), None, result


_RESULT = TypeAdapter(ToolResult)


def _checked(result: ToolResult) -> ToolResult:
    """A tool's result with fields of their declared types, its texts journal-safe; ValidationError names the fields
    that are not (an exit code of 2.5, a submission that is no string): they would fail the journal's record of it."""
    values = {**vars(result), "text": str(result.text)}
    checked = _RESULT.validate_python(values)
    return replace(
        checked,
        text=utf8_safe(checked.text),
        submission=None if checked.submission is None else utf8_safe(checked.submission),
        rejects_later=None if checked.rejects_later is None else utf8_safe(checked.rejects_later),
    )


def _parse_arguments(call: ToolCall, tool: Tool):
    try:
        raw = json.loads(call.arguments) if call.arguments.strip() else {}
    except (json.JSONDecodeError, RecursionError) as e:
        return None, f"Arguments for {call.name} are not valid JSON ({e}). Send one JSON object.", "bad_json"
    if not isinstance(raw, dict):
        return None, f"Arguments for {call.name} must be a JSON object, not {type(raw).__name__}.", "bad_json"
    try:
        return tool.args.model_validate(raw), None, None
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in e.errors()
        )
        return None, f"Invalid arguments for {call.name}: {problems}.", "invalid_args"
    except Exception as e:  # a validator that itself raises is still the model's input problem
        return None, f"Invalid arguments for {call.name}: {type(e).__name__}: {e}.", "invalid_args"


def _from_result(call: ToolCall, result: ToolResult, start: float) -> Observation:
    status: Status = "ok"
    kind: ErrorKind | None = None
    if result.timed_out:
        status, kind = "timeout", "timeout"
    elif not result.ok:
        status = "error"
        kind = (
            "domain" if result.domain_error else "nonzero_exit" if result.exit_code not in (None, 0) else "tool_error"
        )
    return observation(call, status, str(result.text), kind, start, exit_code=result.exit_code)


def observation(
    call: ToolCall,
    status: Status,
    text: str,
    kind: ErrorKind | None,
    start: float | None = None,
    exit_code: int | None = None,
) -> Observation:
    return Observation(
        call_id=call.id,
        tool=call.name,
        status=status,
        text=utf8_safe(text),
        error_kind=kind,
        exit_code=exit_code,
        duration_s=time.monotonic() - start if start is not None else 0.0,
        executed=start is not None,
    )


def _truncate(d: Dispatcher, obs: Observation, step: int) -> Observation:
    """Head+tail by the policy's characters, then, where it is still too long for the window, by tokens."""
    limits = d.policy.truncation.for_tool(obs.tool)
    name = f"step{step:05d}-{obs.call_id}.txt"
    if len(obs.text) > limits.head_chars + limits.tail_chars:
        artifact = d.journal.store_artifact(name, obs.text)
        shown, _ = head_tail(obs.text, limits, artifact)
        cut = Truncation(
            original_chars=len(obs.text), kept_chars=limits.head_chars + limits.tail_chars, artifact=artifact
        )
        obs = obs.model_copy(update={"text": shown, "truncation": cut})
    if d.cap is None:
        return obs
    kept = obs.truncation.artifact if obs.truncation is not None else None  # the full text, already stored
    text = obs.text

    def keep_full() -> str:
        return kept or d.journal.store_artifact(name, text)

    return d.cap(obs, keep_full)


def needs_approval(tool: Tool, approval: ApprovalPolicy) -> bool:
    rule = approval.per_tool.get(tool.name)
    if rule is not None:
        return rule == "always"
    if tool.asks_approval:
        return True
    return approval.approve == "always" or (approval.approve == "writes" and tool.effect is Effect.WRITE)


def idempotency_key(call: ToolCall) -> str:
    """Stable across a resume: the same call id and arguments give the same key."""
    return hashlib.sha256(f"{call.id}\0{call.name}\0{call.arguments}".encode()).hexdigest()[:16]
