"""Inspect AI eval logs, `.json` or `.eval` (a zip of header.json and samples/<id>_epoch_<n>.json): one run
per sample and epoch.

A sample holds the conversation (`messages`), its scores, the model's usage and its `events`; each model
event has the reply it produced (matched to the conversation by the message's id), that call's usage and
the tools it offered. Inspect stores long strings once, as `attachment://<hash>` pointing into the sample's
`attachments`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.types import ErrorKind, Status, Usage
from evals.interop.imports.actions import kept_result
from evals.interop.imports.form import BadTrajectory, Call, Result, Tool, Trajectory, Turn, inferred_tools
from evals.interop.imports.text import arguments_text, fields, iso_seconds, items, text_of

LIMITS = {
    "message": "step_budget",
    "token": "token_budget",
    "time": "wall_budget",
    "working": "wall_budget",
    "cost": "max_cost",
    "context": "context_overflow",
}
TOOL_ERRORS: dict[str, tuple[Status, ErrorKind]] = {
    "timeout": ("timeout", "timeout"),
    "approval": ("denied", "denied"),
    "parsing": ("error", "invalid_args"),
}
PASSING = ("C", True, 1, 1.0)  # Inspect's CORRECT, and a binary scorer's pass
VERDICTS = ("C", "I", True, False, 0, 1, 0.0, 1.0)


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "version" in doc


def read(doc: dict[str, Any], path: Path) -> Iterator[Trajectory]:
    header = doc["eval"]
    samples = doc.get("samples")
    if samples is None:
        raise BadTrajectory("this Inspect log holds no samples (it was written with log_samples off)")
    config = fields(header.get("config"))
    epochs = config["epochs"] if isinstance(config.get("epochs"), int) else 1
    version = fields(header.get("packages")).get("inspect_ai", "")
    for sample in samples:
        if isinstance(sample, dict):
            yield _sample(sample, header, str(version), epochs, doc.get("version"))


def _sample(s: dict[str, Any], header: dict[str, Any], version: str, epochs: int, log_version: Any) -> Trajectory:
    attachments = fields(s.get("attachments"))
    events = [e for e in items(s.get("events")) if isinstance(e, dict) and e.get("event") == "model"]
    replies = {_reply_id(e): e for e in events if _reply_id(e)}
    opening: list[tuple[str, str]] = []
    turns: list[Turn] = []
    model_events = iter(events)
    for m in items(s.get("messages")):
        m = _resolved(m, attachments)
        role = m.get("role")
        if role == "assistant":
            event = replies.get(m.get("id")) if m.get("id") in replies else next(model_events, None)
            turns.append(_turn(m, event, len(turns) + 1))
        elif not turns:
            opening.append(("system" if role == "system" else "user", text_of(m.get("content"))))
        elif role == "tool":
            turns[-1] = _answered(turns[-1], m)
        else:
            turns[-1] = turns[-1].model_copy(update={"notes": (*turns[-1].notes, text_of(m.get("content")))})
    tools = _tools(events[0].get("tools") if events else None)
    stop, message = _stop(s)
    sample_id, epoch = s.get("id"), s.get("epoch", 1)
    scores = {k: v.get("value") for k, v in (s.get("scores") or {}).items() if isinstance(v, dict)}
    started = iso_seconds(events[0].get("timestamp")) if events else None
    task = str(header.get("task") or "task")
    return Trajectory(
        format="inspect",
        format_version=f"eval log v{log_version}",
        instance_id=f"{task}/{sample_id}" + (f"/epoch-{epoch}" if epochs > 1 else ""),
        agent="inspect_ai",
        agent_version=version,
        model=str(header.get("model") or ""),
        opening=tuple(opening),
        turns=tuple(turns),
        tools=tools or inferred_tools(turns),
        tools_recorded=bool(tools),
        stop_reason=stop,
        stop_message=message,
        outcome=_outcome(scores, s.get("output")),
        started_ts=started,
        wall_s=float(s["total_time"]) if isinstance(s.get("total_time"), int | float) else None,
        recorded=_recorded(s.get("model_usage")),
        gaps=_gaps(turns, bool(tools)),
        part=f"sample {sample_id}, epoch {epoch}",
    )


def _turn(m: dict[str, Any], event: dict[str, Any] | None, n: int) -> Turn:
    content = m.get("content")
    parts = items(content)
    reasoning = "\n".join(
        str(p.get("reasoning") or p.get("summary") or "")
        for p in parts
        if isinstance(p, dict) and p.get("type") == "reasoning"
    )
    text = (
        text_of(content)
        if not parts
        else text_of([p for p in parts if not (isinstance(p, dict) and p.get("type") == "reasoning")])
    )
    raw = fields(fields(m.get("metadata")).get("raw_arguments"))  # where a writer kept the strings sent
    calls = [
        Call(
            id=str(tc.get("id") or f"call_{n}_{i}"),
            name=str(tc.get("function", "")),
            arguments=raw.get(str(tc.get("id"))) or arguments_text(tc.get("arguments")),
        )
        for i, tc in enumerate(items(m.get("tool_calls")))
        if isinstance(tc, dict)
    ]
    output = fields(event.get("output")) if event is not None else {}
    usage = output.get("usage") if isinstance(output.get("usage"), dict) else None
    cost = usage.get("total_cost") if usage else None
    choice = fields((items(output.get("choices")) or [{}])[0])
    return Turn(
        text=text,
        reasoning=reasoning,
        calls=tuple(calls),
        usage=_usage(usage, str(m.get("model") or "")),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        model=str(m.get("model") or output.get("model") or ""),
        finish_reason="tool_calls" if choice.get("stop_reason") == "tool_calls" else "stop",
        ts=iso_seconds(event.get("completed") or event.get("timestamp")) if event is not None else None,
    )


def _answered(turn: Turn, m: dict[str, Any]) -> Turn:
    call_id = str(m.get("tool_call_id") or "")
    text = text_of(m.get("content"))
    if call_id not in {c.id for c in turn.calls}:
        return turn.model_copy(update={"notes": (*turn.notes, text)})
    error = m.get("error") if isinstance(m.get("error"), dict) else None
    kept = kept_result(call_id, text, fields(m.get("metadata")))
    if kept is not None:
        result = kept
    elif error is not None:
        status, kind = TOOL_ERRORS.get(str(error.get("type")), ("error", "tool_error"))
        result = Result(call_id=call_id, text=text or str(error.get("message", "")), status=status, error_kind=kind)
    else:
        result = Result(call_id=call_id, text=text)
    return turn.model_copy(update={"results": (*turn.results, result)})


def _usage(u: dict[str, Any] | None, model: str) -> Usage | None:
    """Inspect's input_tokens excludes the cache for some providers (Anthropic: the total then adds cache
    reads and writes) and includes it for others (OpenAI); ours always includes it."""
    if u is None:
        return None

    def n(key: str) -> int:
        value = u.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    cache = n("input_tokens_cache_read") + n("input_tokens_cache_write")
    total = u.get("total_tokens")
    separate = (
        total == n("input_tokens") + n("output_tokens") + cache if isinstance(total, int) else "anthropic" in model
    )
    return Usage(
        prompt_tokens=n("input_tokens") + (cache if cache and separate else 0),
        completion_tokens=n("output_tokens"),
        cached_tokens=n("input_tokens_cache_read"),
        cache_write_tokens=n("input_tokens_cache_write"),
        reasoning_tokens=n("reasoning_tokens"),
    )


def _resolved(m: Any, attachments: dict[str, Any]) -> dict[str, Any]:
    """The message with every `attachment://` string replaced by the text it stands for."""

    def resolve(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("attachment://"):
            return attachments.get(value.removeprefix("attachment://"), value)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    return resolve(m) if isinstance(m, dict) else {}


def _reply_id(event: dict[str, Any]) -> str | None:
    output = fields(event.get("output"))
    choices = items(output.get("choices"))
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    return message.get("id") if isinstance(message, dict) else None


def _tools(raw: Any) -> tuple[Tool, ...]:
    return tuple(
        Tool(
            name=str(t["name"]),
            description=str(t.get("description") or ""),
            input_schema=t["parameters"] if isinstance(t.get("parameters"), dict) else {"type": "object"},
        )
        for t in items(raw)
        if isinstance(t, dict) and t.get("name")
    )


def _stop(s: dict[str, Any]) -> tuple[str, str]:
    kept = fields(s.get("metadata"))
    if isinstance(kept.get("stop_reason"), str) and "run_id" in kept:  # this harness's export keeps its own stop
        return kept["stop_reason"], str(kept.get("stop_message") or "")
    if isinstance(s.get("error"), dict):
        return "harness_error", f"The sample failed in Inspect: {s['error'].get('message', '')}".strip()
    limit = s.get("limit")
    if isinstance(limit, dict):
        kind = str(limit.get("type"))
        return LIMITS.get(kind, "step_budget"), f"Inspect's {kind} limit ({limit.get('limit')}) ended the sample."
    return "submitted", "The sample completed in Inspect; its last reply is the answer."


def _outcome(scores: dict[str, Any], output: Any) -> dict[str, Any]:
    """The scores as recorded; a single pass/fail score also as `passed`, which reports count as success."""
    outcome: dict[str, Any] = {"scores": scores} if scores else {}
    verdicts = [v for v in scores.values() if v in VERDICTS and not isinstance(v, dict | list)]
    if len(scores) == 1 and verdicts:
        outcome["passed"] = verdicts[0] in PASSING
    completion = output.get("completion") if isinstance(output, dict) else None
    if isinstance(completion, str) and completion:
        outcome["answer"] = completion
    return outcome


def _recorded(model_usage: Any) -> dict[str, Any]:
    usage = fields(model_usage)
    totals: dict[str, int | float] = {}
    for per_model in usage.values():
        for key, value in (per_model or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    return totals


def _gaps(turns: list[Turn], tools: bool) -> tuple[str, ...]:
    gaps = [
        "exit codes: Inspect's tool messages carry errors, not exit codes",
        "the exact requests: Inspect keeps them in its model events' `call`, which the import leaves out",
        "how long each tool call ran: kept in Inspect's tool events, not imported",
    ]
    if not tools:
        gaps.append("tool schemas: no model event lists them; the tools are inferred from the calls")
    if any(t.usage is None for t in turns):
        gaps.append("usage of some replies: no model event of the sample matches them")
    if any(t.cost_usd is None for t in turns):
        gaps.append("the cost of each reply: this log records none")
    return tuple(gaps)
