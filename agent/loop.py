"""The agent loop: render the prompt, call the model, journal, dispatch, update, check stop rules.

Read this file top to bottom; everything it calls is one import away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.dispatch import dispatch, needs_approval
from agent.errors import PermanentModelError, TransientModelError, with_retries
from agent.events import MessageAdded, ModelFailed, ModelReplied, RunStopped
from agent.journal import Journal, read_events, read_run_info
from agent.models.base import ModelClient
from agent.policy import HarnessPolicy
from agent.state import RunState, advance
from agent.stopping import Stop, StopRule, after_step
from agent.summary import Summary, summarize
from agent.task import DEFAULT_SYSTEM, Task
from agent.types import Message, ModelReply
from memory.render import render
from sandboxes.base import Sandbox
from tools.base import Registry, ToolContext

NO_TOOL_NUDGE = "Your reply had no tool call, so nothing happened. Act through a tool{submit}."


def run(
    task: Task,
    model: ModelClient,
    tools: Registry,
    sandbox: Sandbox,
    policy: HarnessPolicy,
    journal: Journal,
    approvals: Mapping[str, bool] | None = None,
    stop_rules: Sequence[StopRule] = (),
) -> Summary:
    state = RunState(task=task)
    approvals = approvals or {}
    ctx = ToolContext(sandbox=sandbox, timeout_s=policy.dispatch.tool_timeout_s)
    for message in initial_messages(task, policy):
        add_message(state, journal, message)

    stop: Stop | None = None
    try:
        while stop is None:
            state.step += 1
            prompt = render(state.history, policy.context)
            reply = call_model(model, prompt, tools, policy, journal, state.step)
            if isinstance(reply, Stop):
                stop = reply
                break
            journal.append(
                ModelReplied(
                    step=state.step,
                    reply=reply,
                    prompt_messages=len(prompt),
                    prompt_chars=sum(len(m.text) for m in prompt),
                )
            )
            stop = awaiting_approval(reply, tools, policy, approvals)
            if stop is not None:
                break
            done = dispatch(reply.message.tool_calls, state.step, tools, ctx, policy, journal,
                            approve=lambda call, tool: approvals.get(call.id, False))
            advance(state, reply, done)
            if not done.observations:
                add_message(state, journal, nudge(tools))
            stop = after_step(state, done, policy, sandbox, stop_rules)
    except KeyboardInterrupt:
        stop = Stop("interrupted", "Interrupted by the user; everything up to the last step is in the journal.")

    journal.append(RunStopped(step=state.step, reason=stop.reason, message=stop.message, outcome=stop.outcome))
    summary = summarize(read_events(journal.dir), read_run_info(journal.dir), state.wall_s())
    journal.write_summary(summary)
    return summary


def initial_messages(task: Task, policy: HarnessPolicy) -> list[Message]:
    system = task.system or policy.system_prompt or DEFAULT_SYSTEM
    return [Message(role="system", text=system), Message(role="user", text=task.prompt)]


def add_message(state: RunState, journal: Journal, message: Message) -> None:
    journal.append(MessageAdded(step=state.step, message=message))
    state.history.append(message)


def call_model(
    model: ModelClient, prompt: list[Message], tools: Registry, policy: HarnessPolicy, journal: Journal, step: int
) -> ModelReply | Stop:
    """Transient errors are retried with backoff (each failure journaled); the rest stop the run."""
    errs = policy.errors

    def attempt() -> ModelReply:
        try:
            return model.complete(prompt, list(tools), policy.model)
        except (TransientModelError, PermanentModelError) as e:
            journal.append(ModelFailed(step=step, transient=isinstance(e, TransientModelError), message=str(e)))
            raise

    try:
        return with_retries(attempt, errs.model_attempts, errs.backoff_multiplier_s, errs.backoff_max_s)
    except PermanentModelError as e:
        return Stop("model_error", f"The model call failed and retrying cannot help: {e}")
    except TransientModelError as e:
        return Stop("model_unavailable", f"The model call still failed after {errs.model_attempts} attempts: {e}")


def awaiting_approval(reply: ModelReply, tools: Registry, policy: HarnessPolicy, approvals: Mapping[str, bool]) -> Stop | None:
    pending = [
        c.id
        for c in reply.message.tool_calls
        if (tool := tools.get(c.name)) is not None and needs_approval(tool, policy.approval) and c.id not in approvals
    ]
    if not pending:
        return None
    return Stop("awaiting_approval", f"Calls {', '.join(pending)} need approval before they run.", {"pending": pending})


def nudge(tools: Registry) -> Message:
    submit = ", or call `submit` when the task is done" if tools.get("submit") else ""
    return Message(role="user", text=NO_TOOL_NUDGE.format(submit=submit))
