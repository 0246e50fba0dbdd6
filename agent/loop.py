"""The agent loop: ask (render the prompt, call the model, journal its reply), then act (approval, dispatch,
advance, stop rules, compaction, snapshot), until a stop rule fires.

Read `run` top to bottom; everything it calls is below it or one import away. A resumed run finishes the step
its crashed process began with the same `act`, then enters the same loop.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence

from agent.dispatch import Dispatcher, dispatch, needs_approval
from agent.journal.snapshot import keep_for_forks, write_snapshot
from agent.journal.store import Journal, read_events, read_run_info
from agent.journal.summary import Summary, summarize
from agent.mcp_context import follow_resources
from agent.memory_store import MemoryStore
from agent.models.pricing import cost_usd
from agent.overflow import RECOVERIES, exhausted, make_room, observation_cap
from agent.parts import Loop, Session
from agent.program_calls import programs
from agent.prompt_digest import PromptDigest
from agent.recovery.approval import Decision, answers_for
from agent.recovery.reconcile import Recovered, needs_decision
from agent.recovery.restore import Restored
from agent.retry import with_retries
from agent.run.state import RunState, advance, spend
from agent.run.stopping import OVERFLOW_ADVICE, RESUMABLE, Stop, after_step, prompt_overflows
from agent.run.task import DEFAULT_SYSTEM, Task
from agent.sampling import Sampling
from agent.summariser_calls import JournaledSummariser
from agent.tokens import counter_for
from core.errors import ContextOverflowError, PermanentModelError, TransientModelError
from core.events import Compacted, MessageAdded, ModelFailed, ModelReplied, RunStopped, SamplingReplied
from core.interrupts import Abandoned, abandonable, check
from core.policy import HarnessPolicy, step_params
from core.types import Message, ModelReply
from memory.compaction import CompactionResult
from memory.notes import opening_note
from memory.render import Renderer
from memory.summariser import ModelSummariser, Summariser
from memory.tokens import PromptAccounting
from tools.base import Registry, ToolContext
from tools.disclosure import disclosure, request_tools, tools_text, with_describe_tool

NO_TOOL_NUDGE = "Your reply had no tool call, so nothing happened. Act through a tool{submit}."
ASKED = (
    "A tool asked questions only a person can answer ({ids}); its call waits for them. Answer each with "
    "`harness approve RUN_DIR --call ID --yes --answer JSON` (or --no to decline), then `harness resume`."
)


def run(
    session: Session,
    approvals: Mapping[str, bool | Decision] | None = None,
    resumed: Restored | None = None,
    summariser: Summariser | None = None,
    sampled: Sequence[SamplingReplied] | None = None,
) -> Summary:
    """Run to a stop. `resumed`: continue from the journal (agent.resume); `summariser`: who compaction asks
    (default: the run's own model), its calls journaled; `sampled`: a recording's replies to MCP servers' sampling
    requests, the only ones given (a replay; default: the run's model answers, journaled)."""
    loop = begin(session, approvals or {}, resumed, summariser, sampled)
    stop: Stop | None = None
    try:
        if resumed is not None and resumed.open is not None:  # its reply is journaled: the model is not asked again
            stop = act(loop, resumed.open.reply, resumed.open.recovered, resumed.open.compacted)
        tried = resumed.recoveries if resumed is not None else []
        while stop is None:
            check()  # a safe point: SIGINT or SIGTERM stops the run here (core.interrupts)
            reply = ask(loop, tried)
            stop = reply if isinstance(reply, Stop) else act(loop, reply)
            tried = []
    except Abandoned as e:
        stop = interrupted(e.signal_name)
    except KeyboardInterrupt:  # where no signal handler was installed (a library caller's own thread setup)
        stop = interrupted("SIGINT")
    except Exception as e:  # a bug, a full disk, a reply no client expected: the run still ends on the record
        stop = harness_error(loop, e)
    return finish(loop, stop)


def interrupted(signal_name: str) -> Stop:
    return Stop(
        "interrupted",
        f"Stopped by {signal_name}{' (Ctrl-C)' if signal_name == 'SIGINT' else ''}; everything journaled is kept, and "
        "a call it cut short is settled when the run goes on (`harness resume`).",
        {"signal": signal_name},
    )


def ask(loop: Loop, tried: Sequence[str] = ()) -> ModelReply | Stop:
    """Render the next step's prompt, make room if it does not fit the model's window (agent.overflow), call the
    model and journal its reply. `tried`: the step's recoveries a crashed process journaled; it goes on after them.
    The events journaled while the step is asked (failed attempts, recoveries) carry its number, but a step counts
    only once the model answered it: a call that failed or was cut short leaves the count where it was, so the stop,
    its snapshot and a resume ask that step again under the same number."""
    loop.state.step += 1
    try:
        reply = request_reply(loop, tried)
    except Exception as e:  # a bug, a full disk: named with the step it was asking
        reply = harness_error(loop, e)
    except BaseException:  # a signal (core.interrupts), Ctrl-C
        loop.state.step -= 1
        raise
    if isinstance(reply, Stop):
        loop.state.step -= 1
    return reply


def request_reply(loop: Loop, tried: Sequence[str]) -> ModelReply | Stop:
    """`ask`'s work for the step `loop.state.step`."""
    state, journal = loop.state, loop.session.journal
    follow_resources(loop)
    recoveries = list(RECOVERIES[loop.session.policy.overflow.on_overflow][len(tried) :])
    while True:
        prompt = loop.renderer.render(state.history, state.folds, state.cuts)
        tokens = loop.renderer.tokens(prompt)  # counted before the call: a prompt that cannot fit is not sent
        overflow = prompt_overflows(tokens, loop.session.context_window, loop.session.policy.model.max_tokens)
        if overflow is None:
            counted, reused = loop.accounting.measure(prompt)  # a prompt sent is measured for prefix reuse
            reply = call_model(loop, prompt)
            if not (isinstance(reply, Stop) and reply.reason == "context_overflow"):
                break
            overflow = reply
        if not make_room(loop, recoveries, prompt, overflow):
            return exhausted(overflow, loop.session.policy)
    if isinstance(reply, Stop):
        return reply
    cost = cost_usd(loop.session.price, reply.usage)
    journal.append(
        ModelReplied(
            step=state.step,
            reply=reply,
            prompt_messages=len(prompt),
            prompt_chars=loop.accounting.chars,
            counted_tokens=counted,
            prefix_reused=reused,
            prompt_sha256=loop.digest(prompt, loop.shown),
            cost_usd=cost,
        )
    )
    spend(state, cost)
    return reply


def act(loop: Loop, reply: ModelReply, recovered: Recovered | None = None, compacted: bool = False) -> Stop | None:
    """Carry out one journaled reply: approval, dispatch, advance, stop rules, compaction, snapshot.
    `recovered`: what a crashed process had already done of this step; `compacted`: its compaction is journaled."""
    session, state, tools = loop.session, loop.state, loop.dispatcher.tools
    stop = awaiting_approval(reply, tools, session.policy, loop.approvals, recovered)
    if stop is not None:
        return stop
    done = dispatch(loop.dispatcher, reply.message.tool_calls, state.step, recovered)
    if done.awaiting:
        return Stop("awaiting_approval", ASKED.format(ids=", ".join(done.awaiting)), {"pending": done.awaiting})
    advance(state, reply, done)
    if not done.observations:
        add_message(state, session.journal, nudge(tools), journaled=recovered is not None and recovered.nudged)
    stop = after_step(state, done, session.policy, session.sandbox, session.stop_rules)
    if stop is None and not compacted:
        compact_if_due(loop)
    state.settled_seq = session.journal.seq  # the state now holds every journaled event: a snapshot may cover them
    if stop is None and state.step % session.policy.checkpoint.snapshot_every == 0:
        write_snapshot(state, session.journal, session.sandbox)
    keep_for_forks(state.step, session.sandbox, session.policy.checkpoint.fork_every)
    return stop


def begin(
    session: Session,
    approvals: Mapping[str, bool | Decision],
    resumed: Restored | None,
    summariser: Summariser | None,
    sampled: Sequence[SamplingReplied] | None = None,
) -> Loop:
    """The loop's parts for this run; a new run (or one killed while journaling them) journals its opening."""
    state = resumed.state if resumed is not None else RunState(task=session.task)
    policy, journal = session.policy, session.journal
    counter = counter_for(session.model)
    disclose = disclosure(
        policy.context, list(session.tools), policy.mcp_disclose_over_tokens, lambda t: len(counter.text_ids(t))
    )
    tools = with_describe_tool(session.tools) if disclose is not None else session.tools
    shown = request_tools(tools, disclose)  # what the model is sent; the dispatcher validates against `tools`
    accounting = PromptAccounting(counter, tools_text(shown))
    loop = Loop(
        session=session,
        state=state,
        dispatcher=Dispatcher(
            tools=tools,
            ctx=ToolContext(sandbox=session.sandbox, timeout_s=policy.dispatch.tool_timeout_s),
            policy=policy,
            journal=journal,
            approve=lambda call, tool: approvals.get(call.id, False),
            cap=observation_cap(accounting.counter, session.context_window, policy),
            answers=lambda call_id: answers_for(approvals, call_id),
            programs=programs(session.program_tools) if session.program_tools is not None else None,
            sampling=Sampling(
                session.model,
                policy,
                journal,
                state,
                session.price,
                sampled if sampled is not None else resumed.samplings if resumed is not None else (),
                ask=sampled is None,
            ),
        ),
        shown=shown,
        approvals=approvals,
        renderer=Renderer(policy.context, accounting.counter, accounting.tools_text, session.context_window),
        accounting=accounting,
        summariser=JournaledSummariser(
            summariser or ModelSummariser(session.model, policy.model),
            journal,
            state,
            session.price if summariser is None else None,  # another summariser's price is not known here
            resumed.summaries if resumed is not None else (),
        ),
        digest=PromptDigest(),
    )
    opening = initial_messages(session.task, policy, session.context, session.memory)
    if state.step == 0 and len(state.history) < len(opening):
        for message in opening[len(state.history) :]:
            add_message(state, journal, message)
        state.settled_seq = journal.seq
    if resumed is not None and resumed.last_prompt is not None:  # prefix-reuse figures go on from the last prompt
        upto, folds, cuts = resumed.last_prompt
        accounting.measure(loop.renderer.render(state.history[:upto], state.folds[:folds], cuts))
    return loop


def harness_error(loop: Loop, e: Exception) -> Stop:
    """Called while `e` is being handled, so its traceback is the one kept."""
    where = loop.session.journal.store_artifact("harness_error.txt", traceback.format_exc())
    return Stop(
        "harness_error",
        f"The harness failed at step {loop.state.step}: {type(e).__name__}: {e} (traceback: {where}). "
        "Everything journaled before it is kept; `harness resume` continues from there.",
    )


def finish(loop: Loop, stop: Stop) -> Summary:
    """Journal the stop, snapshot and summarise; a run that ended for good drops its container checkpoints. A
    snapshot that cannot be taken (a sandbox gone bad) is said in artifacts/, and the summary is written all the
    same: a resume folds the journal instead."""
    session, state = loop.session, loop.state
    journal = session.journal
    journal.append(RunStopped(step=state.step, reason=stop.reason, message=stop.message, outcome=stop.outcome))
    try:
        write_snapshot(state, journal, session.sandbox, stop)
    except Exception:
        journal.store_artifact("snapshot_error.txt", traceback.format_exc())
    summary = summarize(read_events(journal.dir), read_run_info(journal.dir), state.wall_s())
    journal.write_summary(summary)
    if summary.stop_reason not in RESUMABLE and getattr(session.sandbox, "container_id", None) is not None:
        from sandboxes.docker_runs import discard_checkpoints  # the Docker SDK only for Docker runs

        discard_checkpoints(journal.dir)
    return summary


def initial_messages(
    task: Task, policy: HarnessPolicy, context: str = "", memory: MemoryStore | None = None
) -> list[Message]:
    """The system prompt, then one user message: what the host placed (MCP resources), then the task. Placed
    first, the same resources give the same prefix whatever the task. Then, when the run starts from a memory
    that holds notes, the memory."""
    system = task.system or policy.system_prompt or DEFAULT_SYSTEM
    prompt = f"{context}\n\n{task.prompt}" if context else task.prompt
    prompt = f"{prompt}\n\n{task.repo_map}" if task.repo_map else prompt
    opening = [Message(role="system", text=system), Message(role="user", text=prompt)]
    note = opening_note(memory.start, policy.memory.superseded_shown) if memory is not None else None
    return opening + ([Message(role="user", text=note)] if note is not None else [])


def memory_now(loop: Loop) -> Callable[[], str | None] | None:
    """The agent's memory as of the current step, for a fold made now to keep."""
    store, shown = loop.session.memory, loop.session.policy.memory.superseded_shown
    return (lambda: store.as_of(loop.state.step, shown)) if store is not None else None


def add_message(state: RunState, journal: Journal, message: Message, journaled: bool = False) -> None:
    """`journaled`: a resumed step's message that the crashed process had already written."""
    if not journaled:
        journal.append(MessageAdded(step=state.step, message=message))
    state.history.append(message)


def call_model(loop: Loop, prompt: list[Message]) -> ModelReply | Stop:
    """Transient errors are retried with backoff (each failure journaled, and priced when the provider said what
    it billed); the rest stop the run, a prompt the model found too long as `context_overflow`."""
    session, state = loop.session, loop.state
    errs = session.policy.errors

    def attempt() -> ModelReply:
        try:
            with abandonable():  # a safe point, and a call a signal may cut short (checkpoint.on_signal)
                return session.model.complete(prompt, list(loop.shown), step_params(session.policy.model, state.step))
        except (TransientModelError, PermanentModelError) as e:
            usage = e.usage if isinstance(e, TransientModelError) else None
            cost = cost_usd(session.price, usage)
            session.journal.append(
                ModelFailed(
                    step=state.step,
                    transient=isinstance(e, TransientModelError),
                    message=str(e),
                    usage=usage,
                    cost_usd=cost,
                )
            )
            spend(state, cost)
            raise

    try:
        return with_retries(attempt, errs.model_attempts, errs.backoff_multiplier_s, errs.backoff_max_s)
    except ContextOverflowError as e:
        return Stop(
            "context_overflow",
            f"The model refused the prompt as longer than its context window: {e} {OVERFLOW_ADVICE}",
            {"source": "provider", "provider_tokens": e.tokens, "provider_limit": e.limit},
        )
    except PermanentModelError as e:
        return Stop("model_error", f"The model call failed and retrying cannot help: {e}")
    except TransientModelError as e:
        return Stop("model_unavailable", f"The model call still failed after {errs.model_attempts} attempts: {e}")


def compact_if_due(loop: Loop) -> None:
    """Fold old steps into the working memory when the next prompt would pass the policy's threshold."""
    state, journal = loop.state, loop.session.journal
    result = loop.renderer.compact_if_due(
        state.history, state.folds, state.step, loop.summariser, loop.shown, state.cuts, memory_now(loop)
    )
    if result is None:
        return
    state.usage = state.usage + result.usage  # a summary is spending too: it counts toward stop.max_tokens
    if result.fold is not None:
        state.folds.append(result.fold)
    if not (result.ok or result.attempts):
        return  # nothing old enough to fold yet: not worth an event every step
    journal.append(compacted(state.step, result, result.message))


def compacted(step: int, result: CompactionResult, message: str) -> Compacted:
    """The journal's record of one compaction made after `step`."""
    return Compacted(
        step=step,
        ok=result.ok,
        trigger=result.trigger,
        version=result.fold and result.fold.version,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        fold=result.fold,
        summariser_usage=result.usage,
        finish_reason=result.finish_reason,
        cut_off=result.cut_off,
        attempts=[a.model_dump() for a in result.attempts],
        message=message,
    )


def awaiting_approval(
    reply: ModelReply,
    tools: Registry,
    policy: HarnessPolicy,
    approvals: Mapping[str, bool | Decision],
    recovered: Recovered | None = None,
) -> Stop | None:
    """Calls that wait for a person: gated by the approval policy, or (on resume) interrupted writes under `ask`."""
    gated, again = [], []
    for c in reply.message.tool_calls:
        tool = tools.get(c.name)
        if tool is None or (recovered is not None and c.id in recovered.observed):
            continue
        if recovered is not None and c.id in recovered.asked:
            gated += [i for i in recovered.asked[c.id] if i not in approvals]  # its tool's unanswered questions
        elif needs_approval(tool, policy.approval) and c.id not in approvals:
            gated.append(c.id)
        elif recovered is not None and needs_decision(c, tool, policy.checkpoint, recovered):
            again.append(c.id)
    if not gated and not again:
        return None
    parts = [f"Calls {', '.join(gated)} need approval before they run."] if gated else []
    if again:
        parts.append(
            f"Calls {', '.join(again)} were cut short by a crash and may have taken effect; "
            "approve running them again, or refuse and the model is told the outcome is unknown."
        )
    return Stop("awaiting_approval", " ".join(parts), {"pending": gated + again})


def nudge(tools: Registry) -> Message:
    submit = ", or call `submit` when the task is done" if tools.get("submit") else ""
    return Message(role="user", text=NO_TOOL_NUDGE.format(submit=submit))
