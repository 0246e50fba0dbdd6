"""The harness's side of a run_code program: which tools a program may call, and the calls it makes.

Each call is dispatched as a direct call is (agent.dispatch.run_call: the same validation, approval, run and
error text) and journaled under the program's own call: `inner_intent` before a write, `inner_observed` after
(its text cut head and tail as a direct call's, the whole in artifacts/), with the id PARENT.N for the
program's N-th call. The program gets the whole output. A program started again after a crash (run_code
resumes: it journals its own effects) is answered from the journal for every call it had made, checked to be
the same call, so a write it made is not made again; a write cut short while it ran is settled as a direct
one would be (its tool's check, else checkpoint.interrupted_writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.dispatch import Dispatcher, Programs, needs_approval, observation, run_call
from agent.recovery.reconcile import Recovered
from core.events import InnerObserved, ProgramFiles
from core.policy import HarnessPolicy
from core.types import Observation, ToolCall, Truncation
from memory.truncate import head_tail
from tools.base import Effect, InnerReply, Registry
from tools.code_mode.tool import NAME, run_code_tool


def offer(tools: Registry, policy: HarnessPolicy) -> tuple[Registry, Registry | None]:
    """The tools the model is offered under `dispatch.mode`, and those a run_code program may call (None in
    calls mode). A program may call every tool but run_code itself, the policy's direct-only ones and those that
    wait for a person's approval (a program cannot stop for one). A registry that already holds run_code (a
    replay's recorded one) keeps it."""
    mode = policy.dispatch.mode
    if mode == "calls":
        return tools, None
    kept = set(policy.dispatch.code.direct_only)
    callable_ = Registry.of(
        (t for t in tools if t.name != NAME and t.name not in kept and not needs_approval(t, policy.approval)),
        world=tools.world,
    )
    run_code = tools.get(NAME) or run_code_tool(list(callable_), policy.dispatch.code, tools.world)
    if mode == "both":
        offered = [t for t in tools if t.name != NAME] + [run_code]
    else:
        offered = [run_code] + [t for t in tools if t.name != NAME and t.name not in callable_.tools]
    return Registry.of(offered, world=tools.world), callable_


def programs(tools: Registry) -> Programs:
    """The dispatcher's `programs`: each run_code call's program served with `tools`."""

    def serve(d: Dispatcher, parent: ToolCall, step: int, recovered: Recovered | None) -> ProgramCalls:
        return ProgramCalls(d, parent, step, tools, recovered or Recovered())

    return serve


@dataclass
class ProgramCalls:
    """One run_code call's program, as the harness serves it (tools.base.ProgramHost)."""

    d: Dispatcher
    parent: ToolCall
    step: int
    tools: Registry
    recovered: Recovered
    made: int = 0

    def call(self, tool: str, arguments: str) -> InnerReply:
        self.made += 1
        call = ToolCall(id=f"{self.parent.id}.{self.made}", name=tool, arguments=arguments)
        prior = self.recovered.inner.get(call.id)
        if prior is not None:
            return self._again(call, prior)
        if self.d.tools.get(tool) is not None and self.tools.get(tool) is None:
            text = f"{tool} cannot be called from a program (it is kept for direct calls); call it directly."
            obs, tb, result = observation(call, "error", text, "unknown_tool"), None, None
        else:
            obs, tb, result = run_call(self.d, call, self.step, self.recovered, tools=self.tools, parent=self.parent.id)
        if result is not None and result.awaiting_input:
            text = f"{tool} asked a question only a person can answer; a program cannot wait for one: call it directly."
            obs, result = obs.model_copy(update={"status": "error", "text": text, "error_kind": "tool_error"}), None
        end = submission = None
        if result is not None and obs.status == "ok":
            submission = result.submission
            changed = self.tools.tools[tool].effect is Effect.WRITE and result.rejects_later is not None
            end = (
                "the run ends: an answer was submitted"
                if submission is not None
                else (result.rejects_later if changed else None)
            )
        self.d.journal.append(
            InnerObserved(
                step=self.step,
                parent=self.parent.id,
                arguments=arguments,
                observation=self._kept(obs),
                traceback=tb,
                end=end,
                submission=submission,
            )
        )
        return InnerReply(obs.status == "ok", obs.text, obs.status, end, submission)

    def _again(self, call: ToolCall, prior: InnerObserved) -> InnerReply:
        """A call the journal holds from before the crash: its recorded reply, if the program asks the same."""
        if (prior.observation.tool, prior.arguments) != (call.name, call.arguments):
            return InnerReply(
                False,
                f"Not run: run again after the run was interrupted, the program's call {self.made} was "
                f"{call.name}({call.arguments}), where before it was {prior.observation.tool}({prior.arguments}); "
                "the calls it had made are journaled and were not made again, so it was stopped here. Look at the "
                "current state before you go on.",
                "rejected",
                end="the program did not make the same calls as before the interruption",
            )
        obs = prior.observation
        text = full_text(obs, self.d.journal.dir)
        return InnerReply(obs.status == "ok", text, obs.status, prior.end, prior.submission)

    def _kept(self, obs: Observation) -> Observation:
        """The observation as journaled: head and tail by the policy's characters, the whole in artifacts/."""
        limits = self.d.policy.truncation.for_tool(obs.tool)
        if len(obs.text) <= limits.head_chars + limits.tail_chars:
            return obs
        artifact = self.d.journal.store_artifact(f"step{self.step:05d}-{obs.call_id}.txt", obs.text)
        shown, _ = head_tail(obs.text, limits, artifact)
        cut = Truncation(
            original_chars=len(obs.text), kept_chars=limits.head_chars + limits.tail_chars, artifact=artifact
        )
        return obs.model_copy(update={"text": shown, "truncation": cut})

    def files_before(self) -> str | None:
        kept = self.recovered.files.get(self.parent.id)
        return (self.d.journal.dir / kept.artifact).read_text() if kept is not None else None

    def record_files(self, files: str) -> None:
        name = f"step{self.step:05d}-{self.parent.id}-files.json"
        artifact = self.d.journal.store_artifact(name, files)
        self.d.journal.append(ProgramFiles(step=self.step, call_id=self.parent.id, artifact=artifact))


def full_text(obs: Observation, run_dir: Path) -> str:
    """An observation's whole text: its artifact's where it was cut."""
    if obs.truncation is not None and obs.truncation.artifact and (run_dir / obs.truncation.artifact).is_file():
        return (run_dir / obs.truncation.artifact).read_text(encoding="utf-8", errors="replace")
    return obs.text
