"""Runs as one Inspect AI eval log, in the JSON form that `inspect_ai.log.read_eval_log` reads and `inspect view`
lists: one sample per run, built from each run's step fold.

A sample holds the run's conversation as chat messages (system, user, assistant with its tool calls and
reasoning, tool results with their errors), a transcript of events (a `model` event per reply and per failed
attempt, a `tool` event per observation, a `compaction` event per fold or cut), the verdict as a score
(`resolved` from a SWE grade.json, `win` in chess, else `success`: C or I), the provider's token usage and the
cost, and the stop as Inspect's limit or error. A model event's input is the conversation the reply answered,
by reference into the sample's message pool; the journal keeps digests of the prompts sent, not their text, so
where the context policy compacted or cut (the compaction events say where) the model saw less than that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from core.events import Compacted, ContextOverflowed
from core.types import ModelReply, Observation, ToolCall, Usage
from evals.interop.exports.run import Recorded, arguments, iso, observation_extra

# Stops that are one of Inspect's sample limits: its type, and the policy knob (`stop.*`) that set it.
LIMITS = {
    "step_budget": ("turn", "max_steps"),
    "token_budget": ("token", "max_tokens"),
    "wall_budget": ("time", "max_wall_s"),
    "max_cost": ("cost", "max_cost_usd"),
}
CONTEXT_STOPS = ("context_overflow", "context_exhausted")
ERROR_STOPS = ("harness_error", "environment_error", "model_error", "model_unavailable", "sandbox_dead")
STOP_REASONS = {"stop": "stop", "tool_calls": "tool_calls", "length": "max_tokens", "content_filter": "content_filter"}
TOOL_ERRORS = {
    "timeout": "timeout",
    "bad_json": "parsing",
    "invalid_args": "parsing",
    "denied": "approval",
    "sandbox_dead": "sandbox_unavailable",
}
TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}


def eval_log(task: str, runs: Mapping[str, Recorded]) -> dict[str, Any]:
    """One log for `runs`, keyed by sample id; `task` names the eval (the run's task, or the batch)."""
    samples = [sample(sample_id, rec) for sample_id, rec in runs.items()]
    recs = list(runs.values())
    models = sorted({rec.info.model for rec in recs})
    started = min(rec.started for rec in recs)
    policies = [rec.info.policy for rec in recs]
    names = sorted({str(p.get("name")) for p in policies})
    same = all(p == policies[0] for p in policies)  # else each sample's metadata names its policy
    eval_id = hashlib.sha256("\n".join(sorted(rec.info.run_id for rec in recs)).encode()).hexdigest()[:22]
    return {
        "version": 2,
        "status": "success" if all(rec.finished for rec in recs) else "started",
        "eval": {
            "eval_id": eval_id,
            "run_id": eval_id,
            "created": started,
            "task": task,
            "task_id": eval_id,
            "dataset": {"name": task, "samples": len(samples), "sample_ids": list(runs)},
            "model": ", ".join(models),
            "model_generate_config": _generate_config(policies[0]) if same else {},
            "config": {},
            "packages": {"harness": recs[0].info.harness_version},
            "metadata": {"exported_from": "harness", "policies": names},
        },
        "plan": {
            "name": "harness",
            "steps": [{"solver": "harness", "params": {"policy": policies[0]} if same else {"policies": names}}],
        },
        "results": {
            "total_samples": len(samples),
            "completed_samples": sum(rec.finished for rec in recs),
            "scores": _scores(recs),
        },
        "stats": {
            "started_at": started,
            "completed_at": max((s["completed_at"] for s in samples if s.get("completed_at")), default=""),
            "model_usage": _usage_by_model(recs),
        },
        "samples": samples,
    }


def log_name(log: dict[str, Any]) -> str:
    """`inspect view` lists a JSON log only under a name that starts with its time: TIME_TASK_ID.json."""
    stamp = log["eval"]["created"][:19].replace(":", "-")
    task = "".join(c if c.isalnum() or c in ".-" else "-" for c in log["eval"]["task"])
    return f"{stamp}+00-00_{task}_{log['eval']['eval_id']}.json"


def sample(sample_id: str, rec: Recorded) -> dict[str, Any]:
    run, s = rec.run, rec.summary
    messages = _messages(rec)
    name, value = rec.verdict
    last = run.replies[-1].replied if run.replies else None
    out = {
        "id": sample_id,
        "epoch": 1,
        "input": rec.task_prompt,
        "target": "",
        "messages": messages,
        "output": _output(last.reply, rec, last.cost_usd)
        if last is not None
        else {"model": rec.info.model, "choices": []},
        "scores": {  # none for an imported run no grader judged: Inspect counts it unscored, not incorrect
            name: {
                "value": "C" if value else "I",
                "answer": rec.submission,
                "explanation": s.message,
                "metadata": {"stop_reason": s.stop_reason, "outcome": s.outcome},
            }
        }
        if value is not None
        else None,
        "metadata": {
            "run_id": rec.info.run_id,
            "task_id": s.task_id,
            "policy": s.policy,
            "stop_reason": s.stop_reason,
            "stop_message": s.message,
            "steps": s.steps,
            "cost_usd": s.cost_usd,
            "unpriced_calls": s.unpriced_calls,
            "cache_hit_rate": s.cache_hit_rate,
            "prefix_reuse_rate": s.prefix_reuse_rate,
        },
        "events": _events(rec),
        # The pool the model events' `input_refs` index into: the conversation, message for message.
        "events_data": {"messages": messages, "calls": []},
        "model_usage": _usage_by_model([rec]),
        "started_at": iso(run.started_ts) if rec.timed else None,
        "completed_at": iso(run.worked_ts) if rec.timed else None,
        "total_time": s.wall_s,
        "working_time": s.wall_s,
        "uuid": rec.info.run_id,
        "error": _error(rec),
        "limit": _limit(rec),
    }
    return {k: v for k, v in out.items() if v is not None}


def _messages(rec: Recorded) -> list[dict[str, Any]]:
    """The conversation, each message with the id `m<seq>` of the journal event it came from."""
    run = rec.run
    models = {s.replied.seq: s.replied.reply.model for s in run.steps if s.replied is not None}
    observed = {o.seq: o.observation for s in run.steps for o in s.observed}
    out = []
    for i, (m, seq) in enumerate(zip(run.history, run.seqs)):
        message: dict[str, Any] = {"id": f"m{seq}", "role": m.role, "content": m.text}
        if m.role == "user" and i < len(run.opening):
            message["source"] = "input"
        elif m.role == "assistant":
            reasoning = m.reasoning.text if m.reasoning is not None else ""
            if reasoning:
                message["content"] = [{"type": "reasoning", "reasoning": reasoning}, {"type": "text", "text": m.text}]
            message |= {"source": "generate", "model": models.get(seq) or rec.info.model}
            if m.tool_calls:
                message["tool_calls"] = [_call(c) for c in m.tool_calls]
                raw = {c.id: r for c in m.tool_calls if (r := arguments(c)[1]) is not None}
                if raw:  # Inspect's calls hold an object only: the strings the model sent, for a reader to restore
                    message["metadata"] = {"raw_arguments": raw}
        elif m.role == "tool":
            message |= {"tool_call_id": m.tool_call_id, "function": m.name}
            if seq in observed:
                message["metadata"] = observation_extra(observed[seq])
                if observed[seq].status != "ok":
                    message["error"] = _tool_error(observed[seq])
        out.append(message)
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    args, raw = arguments(call)
    out: dict[str, Any] = {"id": call.id, "function": call.name, "arguments": args, "type": "function"}
    if not args and raw is not None:
        out["parse_error"] = f"the arguments are not a JSON object: {raw[:200]}"
    return out


def _tool_error(o: Observation) -> dict[str, str]:
    return {"type": TOOL_ERRORS.get(o.error_kind or "", "unknown"), "message": o.text}


def _events(rec: Recorded) -> list[dict[str, Any]]:
    """The transcript: per step, its failed model calls, the overflow recoveries before its reply, the reply,
    one tool event per observation, then the compaction after it."""
    start = rec.run.started_ts or 0.0
    tools = [{"name": t.name, "description": t.description, "parameters": t.input_schema} for t in rec.tools]
    choice = TOOL_CHOICE.get(str(rec.info.policy.get("model", {}).get("tool_choice", "auto")), "auto")
    events: list[dict[str, Any]] = []

    def at(ts: float) -> dict[str, Any]:
        return {"timestamp": iso(ts or start), "working_start": max(0.0, (ts or start) - start)}

    for step in rec.run.steps:
        model = step.reply.model if step.reply is not None and step.reply.model else rec.info.model
        asked = {"model": model, "input": [], "tools": tools, "tool_choice": choice, "config": {}}
        for failed in step.failures:
            output = {"model": model, "choices": []}
            events.append({**at(failed.ts), "event": "model", **asked, "output": output, "error": failed.message})
        events += [_reshaped(e, at(e.ts)) for e in step.overflows]
        if step.replied is not None:
            metadata = {"step": step.n, "counted_tokens": step.counted_tokens, "prefix_reused": step.prefix_reused}
            events.append(
                {
                    **at(step.replied.ts),
                    "event": "model",
                    **asked,
                    "input_refs": [[0, step.history_at]] if step.history_at else [],
                    "output": _output(step.replied.reply, rec, step.replied.cost_usd),
                    "completed": iso(step.replied.ts),
                    "working_time": step.replied.reply.latency_s,
                    "metadata": {k: v for k, v in metadata.items() if v is not None},
                }
            )
        calls = {c.id: c for c in step.calls}
        for o in step.observed:
            call = calls.get(o.observation.call_id)
            events.append(_tool_event(o.observation, at(o.ts), call, f"m{o.seq}"))
        events += [_reshaped(e, at(e.ts)) for e in step.compactions]
    return events


def _tool_event(o: Observation, when: dict[str, Any], call: ToolCall | None, message_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        **when,
        "event": "tool",
        "type": "function",
        "id": o.call_id,
        "function": o.tool,
        "arguments": arguments(call)[0] if call is not None else {},
        "result": o.text,
        "completed": when["timestamp"],
        "working_time": o.duration_s,
        "message_id": message_id,
        "metadata": {"status": o.status, "error_kind": o.error_kind, "exit_code": o.exit_code},
    }
    if o.status != "ok":
        out["error"] = _tool_error(o)
    return out


def _reshaped(e: Compacted | ContextOverflowed, when: dict[str, Any]) -> dict[str, Any]:
    """A fold (working memory in place of old steps) is Inspect's `summary` compaction; cut outputs an `edit`."""
    if isinstance(e, Compacted):
        kind, source = "summary", f"harness: compaction ({e.trigger})"
    else:
        kind, source = ("summary" if e.action == "compact" else "edit"), f"harness: context overflow ({e.source})"
    metadata = {"step": e.step, "ok": getattr(e, "ok", True), "message": e.message}
    if e.fold is not None:
        metadata |= {"version": e.fold.version, "steps_folded": [e.fold.first_step, e.fold.last_step]}
    return {
        **when,
        "event": "compaction",
        "type": kind,
        "tokens_before": e.tokens_before if isinstance(e, Compacted) else e.tokens,
        "tokens_after": e.tokens_after,
        "source": source,
        "metadata": metadata,
    }


def _output(reply: ModelReply, rec: Recorded, cost: float | None) -> dict[str, Any]:
    model = reply.model or rec.info.model
    text = reply.message.text
    message: dict[str, Any] = {"role": "assistant", "content": text, "source": "generate", "model": model}
    if reply.message.tool_calls:
        message["tool_calls"] = [_call(c) for c in reply.message.tool_calls]
    return {
        "model": model,
        "choices": [{"message": message, "stop_reason": STOP_REASONS.get(reply.finish_reason, "unknown")}],
        "completion": text,
        "usage": _usage(reply.usage, cost),
        "time": reply.latency_s,
    }


def _usage(u: Usage, cost: float | None = None) -> dict[str, Any]:
    """Inspect counts input tokens at the full rate apart from cache reads and writes; ours include them."""
    out = {
        "input_tokens": max(0, u.prompt_tokens - u.cached_tokens - u.cache_write_tokens),
        "output_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "input_tokens_cache_read": u.cached_tokens,
        "input_tokens_cache_write": u.cache_write_tokens,
        "reasoning_tokens": u.reasoning_tokens,
        "total_cost": cost,
    }
    return {k: v for k, v in out.items() if v is not None}


def _usage_by_model(recs: list[Recorded]) -> dict[str, dict[str, Any]]:
    """The replies' usage by the model the run asked for, and the runs' cost (every call's, the summariser's
    and failed attempts' included) where every call was priced."""
    totals: dict[str, tuple[Usage, float | None]] = {}
    for rec in recs:
        usage, cost = totals.get(rec.info.model, (Usage(), 0.0))
        for step in rec.run.steps:
            usage = usage + step.usage
        run_cost = rec.summary.cost_usd if not rec.summary.unpriced_calls else None
        totals[rec.info.model] = (usage, cost + run_cost if cost is not None and run_cost is not None else None)
    return {model: _usage(u, c) for model, (u, c) in totals.items()}


def _scores(recs: list[Recorded]) -> list[dict[str, Any]]:
    """Accuracy per verdict over the samples it judged; the unjudged (ungraded imports) are counted apart."""
    by_name: dict[str, list[bool]] = {}
    unknown = 0
    for rec in recs:
        name, value = rec.verdict
        if value is None:
            unknown += 1
        else:
            by_name.setdefault(name, []).append(value)
    return [
        {
            "name": name,
            "scorer": name,
            "scored_samples": len(values),
            "unscored_samples": unknown,
            "params": {},
            "metrics": {"accuracy": {"name": "accuracy", "value": sum(values) / len(values), "params": {}}},
        }
        for name, values in by_name.items()
    ]


def _error(rec: Recorded) -> dict[str, str] | None:
    s = rec.summary
    if s.stop_reason not in ERROR_STOPS:
        return None
    trace = rec.dir / "artifacts" / "harness_error.txt"
    text = trace.read_text(errors="replace") if trace.is_file() else s.message
    return {"message": f"{s.stop_reason}: {s.message}", "traceback": text, "traceback_ansi": text}


def _limit(rec: Recorded) -> dict[str, Any] | None:
    reason = rec.summary.stop_reason
    if reason in CONTEXT_STOPS:
        kind, value = "context", rec.info.context_window
    elif reason in LIMITS:
        kind, knob = LIMITS[reason]
        value = rec.info.policy.get("stop", {}).get(knob)
    else:
        return None
    return {"type": kind, "limit": float(value), "reason": rec.summary.message} if value is not None else None


def _generate_config(policy: dict[str, Any]) -> dict[str, Any]:
    model = policy.get("model", {})
    return {k: model[k] for k in ("temperature", "max_tokens", "seed") if model.get(k) is not None}
