"""OpenHands' event stream (V0): a list of events, each an action (`action`: message, system, run, read, edit,
think, finish...) or an observation (`observation`, with `cause`: the id of the action it answers).

It comes as the list itself (what OpenHands saves as a trajectory, and replays) or inside an evaluation's
output (`output.jsonl`, one instance a line: `instance_id`, `instruction`, `history` the event stream,
`metrics`, `test_result.git_patch`, `error`). An action the model called a tool for carries
`tool_call_metadata`: the tool call's id and name and the provider's whole `model_response`, usage included;
the actions of one response share it, so they are one reply here. The `system` action is the system prompt,
the first user message the task; later user messages, and error observations no action caused (a call
OpenHands refused before running it), come between replies. `finish` ends the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.interop.imports.actions import openai_calls
from evals.interop.imports.form import BadTrajectory, Call, Result, Trajectory, Turn, inferred_tools
from evals.interop.imports.text import arguments_text, fields, iso_seconds, items, text_of
from evals.interop.imports.usage import openai_usage

FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length", "content_filter": "content_filter"}
MAX_ITERATIONS = re.compile(r"maximum iteration", re.IGNORECASE)


def looks_like(doc: Any) -> bool:
    if isinstance(doc, dict):
        return _events(doc.get("history"))
    if isinstance(doc, list) and doc:
        return all(isinstance(d, dict) and _events(d.get("history")) for d in doc) or _events(doc)
    return False


def _events(value: Any) -> bool:
    events = items(value)
    return bool(events) and all(
        isinstance(e, dict) and "id" in e and "source" in e and ("action" in e or "observation" in e)
        for e in events[:5]
    )


def read(doc: Any, path: Path) -> Iterator[Trajectory]:
    if isinstance(doc, list) and _events(doc):
        yield _trajectory(doc, {}, path.stem, "")
        return
    for n, output in enumerate([doc] if isinstance(doc, dict) else doc, 1):
        instance = str(output.get("instance_id") or f"{path.stem}-{n}")
        yield _trajectory(items(output.get("history")), output, instance, instance if isinstance(doc, list) else "")


def _trajectory(events: list[Any], output: dict[str, Any], instance: str, part: str) -> Trajectory:
    reader = _Reader()
    for event in events:
        if isinstance(event, dict):
            reader.add(event)
    if not reader.replies:
        raise BadTrajectory(f"the event stream of {instance} holds no action of the agent's")
    turns = [r.done() for r in reader.replies]
    metadata = fields(output.get("metadata"))
    llm = fields(metadata.get("llm_config"))
    metrics = fields(output.get("metrics"))
    patch = fields(output.get("test_result")).get("git_patch")
    stop, message = _stop(reader, output, metadata)
    stamps = [t.ts for t in turns if t.ts is not None]
    started = iso_seconds(next((e.get("timestamp") for e in events if isinstance(e, dict)), None))
    return Trajectory(
        format="openhands",
        format_version="v0 event stream",
        instance_id=instance,
        agent="openhands",
        agent_version=str(metadata.get("agent_class") or ""),
        model=str(llm.get("model") or next((t.model for t in turns if t.model), "")),
        opening=tuple(reader.opening),
        turns=tuple(turns),
        tools=inferred_tools(turns),
        stop_reason=stop,
        stop_message=message,
        outcome={"answer": patch} if stop == "submitted" and isinstance(patch, str) and patch else {},
        submission=patch if isinstance(patch, str) and patch else None,
        started_ts=started,
        wall_s=(max(stamps) - started) if stamps and started is not None else None,
        recorded={
            k: v
            for k, v in (
                ("accumulated_cost", metrics.get("accumulated_cost")),
                ("max_iterations", metadata.get("max_iterations")),
            )
            if isinstance(v, int | float)
        },
        gaps=_gaps(turns, reader),
        part=part,
    )


class _Reply:
    def __init__(self, response: dict[str, Any], ts: float | None):
        self.response = response
        self.ts = ts
        self.calls: list[Call] = []
        self.thoughts: list[str] = []
        self.results: dict[str, Result] = {}
        self.notes: list[str] = []

    def done(self) -> Turn:
        choice = fields((items(self.response.get("choices")) or [{}])[0])
        message = fields(choice.get("message"))
        text = text_of(message.get("content")) or "\n".join(t for t in self.thoughts if t)
        reason = str(choice.get("finish_reason") or "")
        return Turn(
            text=text,
            reasoning=str(message.get("reasoning_content") or ""),
            calls=tuple(self.calls),
            results=tuple(self.results[c.id] for c in self.calls if c.id in self.results),
            notes=tuple(self.notes),
            usage=openai_usage(self.response.get("usage")),
            model=str(self.response.get("model") or ""),
            finish_reason=FINISH.get(reason, "other") if reason else "stop",
            ts=self.ts,
        )


class _Reader:
    def __init__(self) -> None:
        self.opening: list[tuple[str, str]] = []
        self.replies: list[_Reply] = []
        self.by_response: dict[str, _Reply] = {}
        self.by_action: dict[int, tuple[_Reply, str]] = {}  # an action's id -> its reply and call id
        self.finished = False
        self.unanswered = 0  # replies the stream shows no action of (a refused call): their text is lost

    def add(self, e: dict[str, Any]) -> None:
        if "observation" in e:
            self._observation(e)
            return
        action, source = e.get("action"), e.get("source")
        args = fields(e.get("args"))
        meta = fields(e.get("tool_call_metadata"))
        if action == "system":
            self.opening.append(("system", str(args.get("content") or e.get("message") or "")))
        elif source == "agent" and (meta or action in ("message", "finish")):
            self._action(e, action, args, meta)
        elif action == "message":
            text = str(args.get("content") or e.get("message") or "")
            if self.replies:
                self.replies[-1].notes.append(text)
            else:
                self.opening.append(("user", text))

    def _action(self, e: dict[str, Any], action: Any, args: dict[str, Any], meta: dict[str, Any]) -> None:
        response = fields(meta.get("model_response"))
        key = str(response.get("id") or f"event-{e.get('id')}")
        reply = self.by_response.get(key)
        if reply is None:
            reply = self.by_response[key] = _Reply(response, iso_seconds(e.get("timestamp")))
            self.replies.append(reply)
        self.finished = self.finished or action == "finish"
        if not meta:  # a reply of text alone (no tool call): the message is what the model said
            reply.thoughts.append(str(args.get("content") or e.get("message") or ""))
            return
        call_id = str(meta.get("tool_call_id") or f"call_{e.get('id')}")
        choice = fields((items(response.get("choices")) or [{}])[0])
        sent = {c.id: c for c in openai_calls(fields(choice.get("message")).get("tool_calls"), "call")}
        call = sent.get(call_id) or Call(
            id=call_id, name=str(meta.get("function_name") or action), arguments=arguments_text(args)
        )
        reply.calls.append(call)
        self.by_action[int(e.get("id", -1))] = (reply, call_id)
        if action == "finish":  # nothing answers a finish: the run ends on it
            said = str(args.get("final_thought") or args.get("thought") or e.get("message") or "")
            reply.results[call_id] = Result(call_id=call_id, text=said)

    def _observation(self, e: dict[str, Any]) -> None:
        kind = e.get("observation")
        if kind in ("agent_state_changed", "null", "recall"):
            return
        cause = e.get("cause")
        found = self.by_action.get(cause) if isinstance(cause, int) else None
        text = str(e.get("content") if e.get("content") is not None else e.get("message") or "")
        if found is None:
            if self.replies:
                self.replies[-1].notes.append(text)
                self.unanswered += kind == "error"
            return
        reply, call_id = found
        code = fields(fields(e.get("extras")).get("metadata")).get("exit_code")
        code = code if isinstance(code, int) and code >= 0 else None
        if kind == "error" or e.get("success") is False:
            status, error = "error", "tool_error"
        elif code not in (None, 0):
            status, error = "error", "nonzero_exit"
        else:
            status, error = "ok", None
        reply.results[call_id] = Result(call_id=call_id, text=text, status=status, error_kind=error, exit_code=code)


def _stop(reader: _Reader, output: dict[str, Any], metadata: dict[str, Any]) -> tuple[str, str]:
    error = output.get("error")
    if isinstance(error, str) and error:
        reason = "step_budget" if MAX_ITERATIONS.search(error) else "harness_error"
        return reason, f"OpenHands stopped: {error}"
    if reader.finished:
        return "submitted", "OpenHands' agent called finish."
    return "not_recorded", "The event stream ends without a finish or an error."


def _gaps(turns: list[Turn], reader: _Reader) -> tuple[str, ...]:
    gaps = [
        "the tool schemas OpenHands sent: the event stream names the tools called, not their definitions",
        "what OpenHands recalled into the prompt (workspace and microagent knowledge): only that it did",
        "the cost of each reply: OpenHands' metrics give totals (recorded.accumulated_cost), not one per reply",
        "how long each command ran",
    ]
    if reader.unanswered:
        gaps.append(
            f"{reader.unanswered} replies whose tool call OpenHands refused before running it: the stream keeps "
            "the error it answered with, not the reply"
        )
    if any(t.usage is None for t in turns):
        gaps.append("usage of replies with no tool call: their provider response is not in the stream")
    return tuple(gaps)
