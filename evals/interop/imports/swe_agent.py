"""SWE-agent `.traj`: `trajectory` (one step per action: thought, action, observation, execution time),
`history` (the messages, demonstrations included, as the model saw them), `info` (exit status, submission,
the run's token and cost totals) and, in 1.x, `replay_config` (the run's config, its model and instance).

The history is read for what the model saw; the trajectory fills in what the history lacks (SWE-agent
stops writing the history before the last observation) and each action's execution time. SWE-agent keeps
no usage per reply, only the run's totals.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.interop.imports.actions import BASH, bash_call, openai_calls
from evals.interop.imports.form import BadTrajectory, Call, Result, Trajectory, Turn, inferred_tools
from evals.interop.imports.text import fields, items, text_of

EXITS = {
    "submitted": "submitted",
    "exit_cost": "max_cost",
    "exit_context": "context_overflow",
    "exit_format": "too_many_failures",
    "exit_api": "model_error",
    "exit_environment_error": "environment_error",
    "exit_error": "harness_error",
}


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    steps, history = doc.get("trajectory"), doc.get("history")
    if isinstance(steps, list) and steps and isinstance(steps[0], dict):
        return "action" in steps[0] and "observation" in steps[0]
    return isinstance(history, list) and bool(history) and isinstance(history[0], dict) and "agent" in history[0]


def read(doc: dict[str, Any], path: Path) -> Iterator[Trajectory]:
    steps = [s for s in items(doc.get("trajectory")) if isinstance(s, dict)]
    history = [m for m in items(doc.get("history")) if isinstance(m, dict)]
    if not steps and not history:
        raise BadTrajectory("it has neither a `trajectory` nor a `history` of messages")
    opening, turns = _from_history(history)
    native = any(isinstance(m.get("tool_calls"), list) and m["tool_calls"] for m in history)
    turns = _with_steps(turns, steps, native)
    info = fields(doc.get("info"))
    config = _config(doc.get("replay_config"))
    stats = fields(info.get("model_stats"))
    exit_status = str(info.get("exit_status") or "")
    stop = _stop(exit_status)
    submission = info.get("submission") if isinstance(info.get("submission"), str) else None
    problem = fields(config.get("problem_statement"))
    model = _dig(config, "agent", "model", "name") or _model_from_folder(path)
    yield Trajectory(
        format="swe-agent",
        format_version="swe-agent 1.x" if history and "message_type" in history[0] else "swe-agent 0.x",
        instance_id=str(problem.get("id") or path.name.removesuffix(".traj")),
        agent="swe-agent",
        agent_version=str(info.get("swe_agent_version", "")),
        model=str(model),
        opening=tuple(opening),
        turns=tuple(turns),
        tools=inferred_tools(turns) if native else (BASH,),
        schemas_sent=native,
        stop_reason=stop,
        stop_message=f"SWE-agent's exit status: {exit_status or 'none recorded'}.",
        outcome={"answer": submission} if stop == "submitted" and submission else {},
        submission=submission or None,
        recorded={
            k: stats[k]
            for k in ("instance_cost", "tokens_sent", "tokens_received", "api_calls")
            if isinstance(stats.get(k), int | float)
        },
        gaps=_gaps(native, bool(history), bool(_dig(config, "agent", "model", "name"))),
    )


def _from_history(history: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[Turn]]:
    opening: list[tuple[str, str]] = []
    turns: list[dict[str, Any]] = []
    for m in history:
        role = m.get("role")
        if role == "assistant":
            turns.append(_reply(m, len(turns) + 1))
        elif not turns:
            opening.append(("system" if role == "system" else "user", text_of(m.get("content"))))
        else:
            _answer(turns[-1], m)
    return opening, [
        Turn(
            text=t["text"],
            calls=tuple(t["calls"]),
            results=tuple(t["results"][c.id] for c in t["calls"] if c.id in t["results"]),
            notes=tuple(t["notes"]),
        )
        for t in turns
    ]


def _reply(m: dict[str, Any], n: int) -> dict[str, Any]:
    calls = openai_calls(m.get("tool_calls"), f"call_{n}")
    action = m.get("action")
    if not calls and isinstance(action, str) and action.strip():
        calls = [bash_call(f"call_{n}", action.strip())]
    thought = m.get("thought")
    text = thought if isinstance(thought, str) and not m.get("tool_calls") else text_of(m.get("content"))
    return {"text": text.strip(), "calls": calls, "results": {}, "notes": []}


def _answer(turn: dict[str, Any], m: dict[str, Any]) -> None:
    """A tool message answers the calls it names; a user message the first call still waiting (text-based);
    anything else the harness said is a note."""
    text = text_of(m.get("content"))
    ids = items(m.get("tool_call_ids"))
    waiting = [c for c in turn["calls"] if c.id not in turn["results"]]
    target = next((c for c in waiting if c.id in ids), None) or (waiting[0] if waiting else None)
    if target is None:
        turn["notes"].append(text)
    else:
        turn["results"][target.id] = Result(call_id=target.id, text=text)


def _with_steps(turns: list[Turn], steps: list[dict[str, Any]], native: bool) -> list[Turn]:
    """Each step's execution time on its turn, its observation where the history has none, and a turn of its
    own for each step the history stops before (with function calling, a call of the tool its action names:
    the trajectory keeps the action line, not the call's arguments)."""
    out = list(turns)
    for k, step in enumerate(steps):
        seconds = step.get("execution_time")
        duration = float(seconds) if isinstance(seconds, int | float) else 0.0
        observation = text_of(step.get("observation"))
        if k >= len(out):
            action = str(step.get("action") or "").strip()
            text = str(step.get("thought") or step.get("response") or "").strip()
            calls = (_step_call(f"call_{k + 1}", action, native),) if action else ()
            out.append(Turn(text=text, calls=calls))
        turn = out[k]
        if turn.calls and len(turn.results) < len(turn.calls):
            done = {r.call_id for r in turn.results}
            rest = [Result(call_id=c.id, text=observation) for c in turn.calls if c.id not in done][:1]
            turn = turn.model_copy(update={"results": (*turn.results, *rest)})
        if duration and turn.results:
            first = turn.results[0].model_copy(update={"duration_s": duration})
            turn = turn.model_copy(update={"results": (first, *turn.results[1:])})
        out[k] = turn
    return out


def _step_call(call_id: str, action: str, native: bool) -> Call:
    if not native:
        return bash_call(call_id, action)
    return Call(id=call_id, name=action.split()[0], arguments=json.dumps({"action": action}))


def _config(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return fields(raw)


def _dig(d: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        d = d.get(key) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d


def _model_from_folder(path: Path) -> str:
    """SWE-agent 0.x names its run folders MODEL__DATA__CONFIG__...; the file itself does not name the model."""
    head, sep, _ = path.parent.name.partition("__")
    return head if sep else ""


def _stop(exit_status: str) -> str:
    if not exit_status:
        return "unfinished"
    if exit_status.startswith("submitted"):  # "submitted (exit_cost)": submitted when a limit ended the run
        return "submitted"
    return EXITS.get(exit_status, "harness_error")


def _gaps(native: bool, has_history: bool, named_model: bool) -> tuple[str, ...]:
    gaps = [
        "usage per reply: SWE-agent records only the run's totals (info.model_stats)",
        "the cost of each reply: only the run's total (info.model_stats.instance_cost) is recorded",
        "timestamps: the file records none, so the timeline is unknown (each action's execution time is kept)",
        "exit codes: SWE-agent's observations do not carry them",
        "the exact prompt bytes SWE-agent sent: its history processors may have shortened what the history holds",
        "tool schemas: the file names its tool bundles, not their schemas",
    ]
    if not native:
        gaps.append(
            "tool calls: the agent is text-based; each action is imported as a call of a `bash` tool (SWE-agent runs "
            "its commands in a shell) and the message answering it as that tool's result"
        )
    if not has_history:
        gaps.append("the messages: this file has no history, so the system prompt and task are unknown")
    if not named_model:
        gaps.append("the model: the file does not name it; it is taken from the run folder's name where it can be")
    return tuple(gaps)
