"""ATIF, the Agent Trajectory Interchange Format (Harbor, Terminal-Bench 2.0): `schema_version`, `agent`
(name, version, model, tool definitions), `steps` (system, user and agent steps; an agent step's tool calls,
the observation answering them and its metrics) and `final_metrics`. ATIF has no field for how a run ended;
this harness's export keeps its stop reason, message and outcome under the trajectory's `extra`, read back here.

Harbor's converters write text-based agents (mini-swe-agent v1) as agent steps with no tool calls and an
observation without a call id; such a step whose message holds one fenced bash block is imported as a call
of a `bash` tool, as mini-swe-agent's own files are. ATIF records no exit status; where a writer kept one under
an observation result's `extra` (this harness's export does), it is read back, as are raw argument strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.types import Usage
from evals.interop.imports.actions import BASH, bash_call, kept_result, shell_result, split_action
from evals.interop.imports.form import BadTrajectory, Call, Result, Tool, Trajectory, Turn, inferred_tools
from evals.interop.imports.text import arguments_text, fields, iso_seconds, items, text_of

GENERIC_NAMES = ("trajectory", "agent", "logs")  # file and folder names that name no task


def looks_like(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and str(doc.get("schema_version", "")).startswith("ATIF")
        and isinstance(doc.get("steps"), list)
    )


def read(doc: dict[str, Any], path: Path) -> Iterator[Trajectory]:
    agent = fields(doc.get("agent"))
    steps = [s for s in doc["steps"] if isinstance(s, dict) and not s.get("is_copied_context")]
    if not steps:
        raise BadTrajectory("its `steps` list is empty")
    opening: list[tuple[str, str]] = []
    turns: list[Turn] = []
    for step in steps:
        source = step.get("source")
        if source == "agent":
            turns.append(_turn(step, len(turns) + 1))
        elif not turns:
            opening.append(("system" if source == "system" else "user", text_of(step.get("message"))))
        else:
            turns[-1] = turns[-1].model_copy(update={"notes": (*turns[-1].notes, text_of(step.get("message")))})
    recorded_tools = _tools(agent.get("tool_definitions"))
    text_based = any(c.name == "bash" and c.id.startswith("text_") for t in turns for c in t.calls)
    stamps = [ts for ts in (iso_seconds(s.get("timestamp")) for s in steps) if ts is not None]
    final = fields(doc.get("final_metrics"))
    kept = fields(doc.get("extra"))  # this harness's export keeps its stop and outcome there
    stop = kept.get("stop_reason") if isinstance(kept.get("stop_reason"), str) else None
    yield Trajectory(
        format="atif",
        format_version=str(doc.get("schema_version")),
        instance_id=_instance_id(doc, path),
        agent=str(agent.get("name") or "unknown"),
        agent_version=str(agent.get("version") or ""),
        model=str(agent.get("model_name") or next((t.model for t in turns if t.model), "")),
        opening=tuple(opening),
        turns=tuple(turns),
        tools=recorded_tools or ((BASH,) if text_based else inferred_tools(turns)),
        tools_recorded=bool(recorded_tools),
        schemas_sent=bool(recorded_tools) or not text_based,
        stop_reason=stop or "not_recorded",
        stop_message=str(kept.get("message") or "") if stop else "ATIF does not record how the run ended.",
        outcome=fields(kept.get("outcome")) if stop else {},
        started_ts=min(stamps) if stamps else None,
        wall_s=(max(stamps) - min(stamps)) if stamps else None,
        recorded={k: v for k, v in final.items() if isinstance(v, int | float) and not isinstance(v, bool)},
        gaps=_gaps(doc, turns, bool(recorded_tools), bool(stamps)),
    )


def _turn(step: dict[str, Any], n: int) -> Turn:
    text = text_of(step.get("message"))
    calls = [
        Call(
            id=str(tc.get("tool_call_id") or f"call_{n}_{i}"),
            name=str(tc.get("function_name", "")),
            arguments=_arguments(tc),
        )
        for i, tc in enumerate(items(step.get("tool_calls")))
        if isinstance(tc, dict)
    ]
    observation = fields(step.get("observation"))
    results = [r for r in items(observation.get("results")) if isinstance(r, dict)]
    answered: dict[str, Result] = {}
    notes: list[str] = []
    loose = [r for r in results if not r.get("source_call_id")]
    if not calls and len(loose) == 1:  # a text-based agent's action, answered by the harness
        rest, commands = split_action(text)
        if len(commands) == 1:
            text, calls = rest, [bash_call(f"text_{n}", commands[0])]
    for r in results:
        call_id = str(r.get("source_call_id") or (calls[0].id if len(calls) == 1 and r in loose else ""))
        if call_id and call_id not in answered and any(c.id == call_id for c in calls):
            answered[call_id] = _result(call_id, r)
        else:
            notes.append(text_of(r.get("content")))
    reasoning = text_of(step.get("reasoning_content"))
    if reasoning.strip() == text_of(step.get("message")).strip():  # some converters repeat the message as reasoning
        reasoning = ""
    metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else None
    return Turn(
        text=text,
        reasoning=reasoning,
        calls=tuple(calls),
        results=tuple(answered[c.id] for c in calls if c.id in answered),
        notes=tuple(notes),
        usage=_usage(metrics),
        cost_usd=float(metrics["cost_usd"]) if metrics and isinstance(metrics.get("cost_usd"), int | float) else None,
        model=str(step.get("model_name") or ""),
        ts=iso_seconds(step.get("timestamp")),
    )


def _arguments(tc: dict[str, Any]) -> str:
    """The raw string where the writer kept one (a harness's export of arguments that were not JSON)."""
    raw = fields(tc.get("extra")).get("raw_arguments")
    return raw if isinstance(raw, str) else arguments_text(tc.get("arguments"))


def _result(call_id: str, r: dict[str, Any]) -> Result:
    text = text_of(r.get("content"))
    return kept_result(call_id, text, fields(r.get("extra"))) or shell_result(call_id, text)


def _usage(metrics: dict[str, Any] | None) -> Usage | None:
    if metrics is None or (metrics.get("prompt_tokens") is None and metrics.get("completion_tokens") is None):
        return None
    extra = fields(metrics.get("extra"))
    prompt_details = fields(extra.get("prompt_tokens_details"))
    completion_details = fields(extra.get("completion_tokens_details"))

    def count(*values: Any) -> int:
        return next((v for v in values if isinstance(v, int) and v >= 0), 0)

    return Usage(
        prompt_tokens=count(metrics.get("prompt_tokens")),
        completion_tokens=count(metrics.get("completion_tokens")),
        cached_tokens=count(metrics.get("cached_tokens"), prompt_details.get("cached_tokens")),
        cache_write_tokens=count(extra.get("cache_creation_input_tokens"), prompt_details.get("cache_write_tokens")),
        reasoning_tokens=count(extra.get("reasoning_tokens"), completion_details.get("reasoning_tokens")),
    )


def _tools(definitions: Any) -> tuple[Tool, ...]:
    """OpenAI function definitions, as ATIF's `agent.tool_definitions` holds them."""
    tools = []
    for d in items(definitions):
        fn = fields(fields(d).get("function", d))
        if isinstance(fn, dict) and fn.get("name"):
            schema = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {"type": "object"}
            tools.append(Tool(name=str(fn["name"]), description=str(fn.get("description") or ""), input_schema=schema))
    return tuple(tools)


def _instance_id(doc: dict[str, Any], path: Path) -> str:
    """The task the producer named, else the file's name, else its folders' (Harbor writes
    <trial>/agent/trajectory.json), else the session id."""
    extra = fields(doc.get("extra"))
    for key in ("instance_id", "task_name", "task_id"):
        if isinstance(extra.get(key), str) and extra[key]:
            return extra[key]
    stem = path.name.removesuffix(".json").removesuffix(".trajectory")
    for name in (stem, path.parent.name, path.parent.parent.name):
        if name and name not in GENERIC_NAMES:
            return name
    return str(doc.get("session_id") or stem)


def _gaps(doc: dict[str, Any], turns: list[Turn], tools: bool, stamps: bool) -> tuple[str, ...]:
    gaps = [
        "how the run ended: ATIF records no exit status or outcome (Harbor keeps the verifier's reward apart)",
        "the exact prompt bytes the agent sent: ATIF keeps the messages, not the requests",
        "exit codes: ATIF observations do not carry them (a `<returncode>` in the text is read)",
        "how long each tool call ran",
    ]
    if not tools:
        gaps.append("tool schemas: `agent.tool_definitions` is absent; the tools are inferred from the calls")
    if not stamps:
        gaps.append("timestamps: the steps carry none")
    if any(t.usage is None for t in turns):
        gaps.append("usage of some replies: their steps have no metrics")
    if any(s.get("is_copied_context") for s in doc["steps"] if isinstance(s, dict)):
        gaps.append("steps copied from an earlier trajectory as context (is_copied_context) are left out")
    if doc.get("subagent_trajectories") or doc.get("continued_trajectory_ref"):
        gaps.append("subagent and continued trajectories are not imported, only this one")
    return tuple(gaps)
