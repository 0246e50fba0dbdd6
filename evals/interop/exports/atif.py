"""A run as an ATIF trajectory (Agent Trajectory Interchange Format, the format of Harbor, read by Docent,
Phoenix and Inspect Scout), built from the run's step fold.

The opening system prompt and task become `system` and `user` steps; each model reply becomes one `agent`
step with its tool calls, their observations (one result per call, linked by `source_call_id`) and the
provider's usage; a harness note added in a step (the "no tool call" nudge) follows it as a step of its
own (a run that stopped before its opening, its sandbox never started, gets its task from run.json as
its one step). What ATIF has no field for is kept under `extra`: the harness's step number and finish reason, each
observation's status, error kind and exit code, the raw argument string where the object does not restate it.
"""

from __future__ import annotations

from typing import Any

from agent.journal.fold import Step
from core.types import Message, Observation, ToolCall
from evals.interop.exports.run import Recorded, arguments, iso, observation_extra, tool_definitions

# llm_call_count and the `extra` of tool calls and observation results are v1.7's; harbor's models accept it.
SCHEMA_VERSION = "ATIF-v1.7"


def trajectory(rec: Recorded) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []

    def add(source: str, message: str, **fields: Any) -> None:
        steps.append({"step_id": len(steps) + 1, "source": source, "message": message, **_present(fields)})

    for m in rec.run.opening:
        add(_source(m), m.text)
    for step in rec.run.steps:
        if step.replied is not None:
            add("agent", step.replied.reply.message.text, **_agent_step(step, rec.timed))
        for note in step.notes:
            add(_source(note), note.text, extra={"step": step.n})
    if not steps:  # stopped before its opening was journaled (the sandbox did not start); ATIF needs a step
        add("user", rec.task_prompt, extra={"not_sent": "the run stopped before the task reached the model"})
    return _present(
        {
            "schema_version": SCHEMA_VERSION,
            "session_id": rec.info.run_id,
            "agent": _present(
                {
                    "name": rec.agent[0],
                    "version": rec.agent[1],
                    "model_name": str((rec.info.imported or {}).get("model") or rec.info.model),
                    "tool_definitions": tool_definitions(rec.tools) or None,
                    "extra": {"policy": rec.info.policy.get("name"), "toolset": rec.info.toolset},
                }
            ),
            "steps": steps,
            "notes": f"Exported from the harness run directory {rec.name}.",
            "final_metrics": _final_metrics(rec, len(steps)),
            "extra": _run_extra(rec),
        }
    )


def _source(m: Message) -> str:
    return "system" if m.role == "system" else "user"


def _agent_step(step: Step, timed: bool) -> dict[str, Any]:
    assert step.replied is not None
    reply = step.replied.reply
    reasoning = reply.message.reasoning
    results = [_result(o) for o in step.observations]
    return {
        "timestamp": iso(step.replied.ts) if timed else None,
        "model_name": reply.model or None,
        "reasoning_content": reasoning.text if reasoning is not None and reasoning.text else None,
        "tool_calls": [_call(c) for c in reply.message.tool_calls] or None,
        "observation": {"results": results} if results else None,
        "metrics": _metrics(step),
        "llm_call_count": 1,
        "extra": _present(
            {
                "step": step.n,
                "finish_reason": reply.finish_reason,
                "failed_model_calls": [{"message": f.message, "transient": f.transient} for f in step.failures] or None,
            }
        ),
    }


def _call(call: ToolCall) -> dict[str, Any]:
    args, raw = arguments(call)
    return _present(
        {
            "tool_call_id": call.id,
            "function_name": call.name,
            "arguments": args,
            "extra": {"raw_arguments": raw} if raw is not None else None,
        }
    )


def _result(o: Observation) -> dict[str, Any]:
    return {"source_call_id": o.call_id, "content": o.text, "extra": observation_extra(o)}


def _metrics(step: Step) -> dict[str, Any]:
    assert step.replied is not None
    u = step.usage
    return _present(
        {
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "cached_tokens": u.cached_tokens,
            "cost_usd": step.replied.cost_usd,
            "extra": _present(
                {
                    "cache_write_tokens": u.cache_write_tokens,
                    "reasoning_tokens": u.reasoning_tokens,
                    "counted_tokens": step.counted_tokens,
                    "prefix_reused": step.prefix_reused,
                    "latency_s": step.replied.reply.latency_s,
                }
            ),
        }
    )


def _final_metrics(rec: Recorded, steps: int) -> dict[str, Any]:
    s = rec.summary
    return _present(
        {
            "total_prompt_tokens": s.tokens.prompt,
            "total_completion_tokens": s.tokens.completion,
            "total_cached_tokens": s.tokens.cached,
            "total_cost_usd": s.cost_usd,
            "total_steps": steps,
            "extra": {
                "total_cache_write_tokens": s.tokens.cache_write,
                "total_reasoning_tokens": s.tokens.reasoning,
                "model_calls": s.model_calls,
                "model_failures": s.model_failures,
                "tool_calls": s.tool_calls_total,
                "compactions": s.compactions,
                "overflow_recoveries": s.overflow_recoveries,
                "summariser_tokens": s.summariser_tokens.model_dump(),
                "unpriced_calls": s.unpriced_calls,
                "wall_s": s.wall_s,
            },
        }
    )


def _run_extra(rec: Recorded) -> dict[str, Any]:
    name, value = rec.verdict
    s = rec.summary
    return {
        "run_id": rec.info.run_id,
        "task_id": s.task_id,
        "stop_reason": s.stop_reason,
        "message": s.message,
        "outcome": s.outcome,
        "verdict": {"name": name, "value": value},
    }


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """ATIF leaves out what is unknown rather than writing null."""
    return {k: v for k, v in fields.items() if v is not None}
