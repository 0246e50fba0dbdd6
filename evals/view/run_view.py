"""One run as the viewer shows it: each step's reply (text, reasoning), its calls and their observations, what it
cost, the findings on it, and what the context policy did to its prompt: how many of the history's messages the
prompt held, the tokens counted and reused, and the compactions and overflow recoveries around it. The prompt
itself is rebuilt on demand, one step at a time, from the journal (the folds and cuts it recorded, under the
run's own policy): the journal keeps a digest of each prompt, not its text.
"""

from __future__ import annotations

from typing import Any

from agent.journal.fold import Step, fold
from agent.journal.store import read_events
from agent.journal.tools import recorded_tools
from agent.tokens import counter_for
from core.policy import HarnessPolicy
from evals.reports.load import RunData
from memory.render import Renderer
from tools.base import recorded_tool
from tools.disclosure import tools_text

CLIP = 6000  # characters of a text sent whole; the rest is fetched with the step's prompt, or read in the run folder


def clip(text: str) -> dict[str, Any]:
    return {"text": text[:CLIP], "chars": len(text), "clipped": len(text) > CLIP}


def run_view(run: RunData) -> dict[str, Any]:
    by_step: dict[int, list[dict[str, Any]]] = {}
    for f in run.findings:
        by_step.setdefault(f.step, []).append({"detector": f.detector, "detail": f.detail, "tokens": f.tokens})
    s = run.summary
    return {
        "run_id": s.run_id,
        "task_id": s.task_id,
        "model": s.model,
        "policy": s.policy,
        "status": "running" if s.stop_reason == "unfinished" else s.stop_reason,
        "message": s.message,
        "outcome": run.outcome,
        "cost_usd": run.cost if run.cost is not None else s.cost_usd,
        "tokens": s.tokens.model_dump(),
        "opening": [{"role": m.role, **clip(m.text)} for m in run.opening],
        "steps": [step_view(step, by_step.get(step.n, []), cost) for step, cost in zip(run.steps, run.step_costs)],
        "journal_notes": run.journal_notes,
    }


def step_view(step: Step, findings: list[dict[str, Any]], cost: float | None) -> dict[str, Any]:
    reply = step.reply
    results = {o.call_id: o for o in step.observations}
    return {
        "n": step.n,
        "ts": step.replied.ts if step.replied is not None else step.first_ts,
        "text": clip(reply.message.text) if reply else None,
        "reasoning": clip(reply.message.reasoning.text) if reply and reply.message.reasoning else None,
        "finish": reply.finish_reason if reply else None,
        "calls": [
            {
                "id": c.id,
                "name": c.name,
                "arguments": clip(c.arguments),
                "result": _observation(results.get(c.id)),
            }
            for c in step.calls
        ],
        "notes": [clip(m.text) for m in step.notes],
        "failures": [f.message for f in step.failures],
        "usage": step.usage.model_dump(),
        "cost_usd": cost,
        "context": {
            "history": step.history_at,
            "prompt_messages": step.replied.prompt_messages if step.replied is not None else None,
            "counted_tokens": step.counted_tokens,
            "prefix_reused": step.prefix_reused,
            "compactions": [
                {"ok": c.ok, "before": c.tokens_before, "after": c.tokens_after, "message": c.message}
                for c in step.compactions
            ],
            "overflows": [{"action": o.action, "tokens": o.tokens, "message": o.message} for o in step.overflows],
        },
        "findings": findings,
    }


def _observation(o: Any) -> dict[str, Any] | None:
    if o is None:
        return None
    return {"status": o.status, "error_kind": o.error_kind, "exit_code": o.exit_code, **clip(o.text)}


def prompt_at(run: RunData, n: int) -> list[dict[str, Any]]:
    """The prompt step `n` was sent, rebuilt from the journal under the run's own policy: its history up to the
    step, the folds made before it and the outputs cut before its call."""
    folded = fold(read_events(run.dir))
    step = next(s for s in folded.steps if s.n == n)
    folds = [c.fold for s in folded.steps if s.n < n for c in s.compactions if c.fold is not None]
    folds += [o.fold for s in folded.steps if s.n <= n for o in s.overflows if o.fold is not None]
    cuts = {c.index: c.text for s in folded.steps if s.n <= n for o in s.overflows for c in o.cuts}
    policy = HarnessPolicy.model_validate(run.info.policy)
    shown = tools_text([recorded_tool(r) for r in recorded_tools(run.dir) or []])
    renderer = Renderer(policy.context, counter_for(run.info.model), shown, run.info.context_window)
    prompt = renderer.render(folded.history[: step.history_at], sorted(folds, key=lambda f: f.version), cuts)
    return [{"role": m.role, "name": m.name, **clip(m.text)} for m in prompt]
