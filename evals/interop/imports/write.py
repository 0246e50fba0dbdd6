"""A run directory from an imported trajectory, through the project's own journal: run.json, events.jsonl,
artifacts/tools.json (and model.patch), summary.json. The step fold, reports, rerender and A/B then read an
import exactly as they read a run of ours.

Each reply's prompt is rebuilt the way the loop renders one (memory.render, under the policy recorded for
the source: every message resent, reasoning not), so `counted_tokens` and `prefix_reused` are the harness's
own counts beside the source's recorded usage. The run is written in a staging folder and renamed into
place once whole, so a crash never leaves half an import under its final name. Its id comes from the file's
sha256: importing the same file again finds the same run and leaves it as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from agent.journal.store import Journal, RunInfo, make_folder
from agent.journal.summary import summarize
from agent.models.pricing import PriceTable, find_price
from agent.models.windows import known_window
from agent.run.task import Task
from agent.tokens import counter_for
from core.context_policy import StripReasoning
from core.events import Compacted, Event, MessageAdded, ModelReplied, RunStopped, ToolObserved
from core.policy import HarnessPolicy
from core.types import Message, ModelReply, Observation, Reasoning, ToolCall, Usage
from evals.interop.imports.detect import Source
from evals.interop.imports.form import Compaction, Result, Trajectory
from memory.render import Renderer
from memory.tokens import PromptAccounting
from tools.base import Effect, ToolRecord, recorded_tool
from tools.disclosure import tools_text

STAGING = ".importing"  # inside the output folder: runs being written, renamed into place when whole


def run_id(t: Trajectory, source: Source) -> str:
    """The instance, and a digest of the file's content (and of the part, for a file of several runs)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", t.instance_id).strip("-.")[:80] or "run"
    return f"{slug}-{hashlib.sha256(f'{source.sha256}/{t.part}'.encode()).hexdigest()[:10]}"


def import_run(t: Trajectory, source: Source, out: Path, prices: PriceTable) -> tuple[Path, bool]:
    """(the run directory, whether it was written now); an identical import already there is kept."""
    run_dir = out / run_id(t, source)
    if _same_import(run_dir, source.sha256):
        return run_dir, False
    if run_dir.exists():  # an import cut short, or a folder of something else: kept aside, never overwritten
        run_dir.rename(out / f".{run_dir.name}.incomplete-{datetime.now(UTC):%Y%m%d%H%M%S%f}")
    staging = make_folder(out / STAGING, "staging folder", exist_ok=True)
    shutil.rmtree(staging / run_dir.name, ignore_errors=True)
    info = run_info(t, source, run_dir.name, prices)
    journal = Journal.create(staging, info)
    try:
        records = tool_records(t)
        journal.store_artifact("tools.json", json.dumps([r.model_dump(mode="json") for r in records], indent=1))
        if t.submission and "diff --git" in t.submission:
            journal.store_artifact("model.patch", t.submission)
        events = journal.extend(journal_events(t, info, records))
        journal.write_summary(summarize(events, info, t.wall_s or 0.0))
    finally:
        journal.close()
    os.replace(journal.dir, run_dir)
    try:
        staging.rmdir()  # gone once empty; what a crash left in it is overwritten by the next import
    except OSError:
        pass
    return run_dir, True


def run_info(t: Trajectory, source: Source, name: str, prices: PriceTable) -> RunInfo:
    model = model_string(t.model)
    system = next((text for role, text in t.opening if role == "system"), None)
    prompt = next((text for role, text in t.opening if role == "user" and text.strip()), "") or "(no task recorded)"
    started = t.started_ts if t.started_ts is not None else (t.turns[0].ts if t.turns else None)
    return RunInfo(
        run_id=name,
        task=Task(id=t.instance_id, prompt=prompt, system=system).model_dump(mode="json"),
        model=model,
        sandbox="imported",  # the tools ran in the source harness's environment; nothing here can resume it
        toolset="imported",
        tools=[
            {"name": r.name, "server": r.server, "effect": r.effect.value, "schema_sha256": r.schema_sha256}
            for r in tool_records(t)
        ],
        policy=source_policy(t).model_dump(mode="json"),
        seed=None,
        context_window=known_window(model),
        started_at=datetime.fromtimestamp(started, UTC).isoformat() if started is not None else "",
        price=find_price(model, prices),
        imported={
            "format": t.format,
            "format_version": t.format_version,
            "file": source.path.name,
            "sha256": source.sha256,
            "part": t.part or None,
            "agent": t.agent,
            "agent_version": t.agent_version,
            "model": t.model,
            "tools": [tool.name for tool in t.tools],
            "tool_set": "recorded" if t.tools_recorded else "inferred",
            "tool_schemas_sent": t.schemas_sent,
            "timestamps": any(turn.ts is not None for turn in t.turns),  # else each event's time is the import's
            "recorded": t.recorded,
        },
        imported_gaps=list(t.gaps),
    )


def source_policy(t: Trajectory) -> HarnessPolicy:
    """What the source did to its context, as a policy: every message resent; reasoning is kept for reading
    but not counted as resent (the formats do not say whether it was)."""
    return HarnessPolicy(name=t.agent, context=[StripReasoning(keep="none")])


def tool_records(t: Trajectory) -> list[ToolRecord]:
    """The tools whose schemas the file records (or the agent's own source defines): what rerender prices.
    A text-based agent sent none, so it has none."""
    return [
        ToolRecord(
            name=tool.name,
            server=t.agent,
            effect=Effect.WRITE,  # the formats do not say which tools change the world; assume they all may
            summary=tool.description.split("\n", 1)[0],
            description=tool.description,
            input_schema=tool.input_schema,
        )
        for tool in t.tools
        if tool.input_schema is not None and t.schemas_sent
    ]


def model_string(name: str) -> str:
    """The source's model name as a model string: LiteLLM's and Inspect's `provider/model` becomes
    `provider:model`, so the price table and the token counter find it."""
    if not name:
        return "unknown"
    provider, sep, rest = name.partition("/")
    return f"{provider}:{rest}" if sep and ":" not in name else name


def journal_events(t: Trajectory, info: RunInfo, records: list[ToolRecord]) -> list[Event]:
    counter = counter_for(info.model)
    shown = tools_text([recorded_tool(r) for r in records]) if records else ""
    policy = HarnessPolicy.model_validate(info.policy)
    renderer = Renderer(policy.context, counter, shown, info.context_window)
    accounting = PromptAccounting(counter, shown)
    history: list[Message] = []
    events: list[Event] = []
    ts = t.started_ts or next((turn.ts for turn in t.turns if turn.ts), 0.0)  # 0: the import's time
    for role, text in t.opening:
        message = Message(role="system" if role == "system" else "user", text=text)
        events.append(MessageAdded(step=0, ts=ts, message=message))
        history.append(message)
    for n, turn in enumerate(t.turns, 1):
        ts = turn.ts or ts
        prompt = renderer.render(history)
        counted, reused = accounting.measure(prompt)
        message = Message(
            role="assistant",
            text=turn.text,
            tool_calls=tuple(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in turn.calls),
            reasoning=Reasoning(text=turn.reasoning, provider=t.agent) if turn.reasoning else None,
        )
        reply = ModelReply(
            message=message,
            usage=turn.usage or Usage(),
            finish_reason=turn.finish_reason,
            model=turn.model or t.model,
        )
        events.append(
            ModelReplied(
                step=n,
                ts=ts,
                reply=reply,
                prompt_messages=len(prompt),
                prompt_chars=accounting.chars,
                counted_tokens=counted,
                prefix_reused=reused,
                cost_usd=turn.cost_usd,
            )
        )
        history.append(message)
        results = {r.call_id: r for r in turn.results}
        for call in turn.calls:  # one observation per call, as the dispatcher guarantees for our runs
            observation = _observation(call.id, call.name, results.get(call.id))
            events.append(ToolObserved(step=n, ts=ts, observation=observation))
            history.append(observation.to_message())
        if turn.compaction is not None:  # the source resent none of it after: its prompts restart from the summary
            events.append(_compacted(n, ts, t.agent, turn.compaction))
            history = [m for m in history[: len(t.opening)] if m.role == "system"]
        for note in turn.notes:
            note_message = Message(role="user", text=note)
            events.append(MessageAdded(step=n, ts=ts, message=note_message))
            history.append(note_message)
    events.append(RunStopped(step=len(t.turns), ts=ts, reason=t.stop_reason, message=t.stop_message, outcome=t.outcome))
    return events


def _compacted(step: int, ts: float, agent: str, c: Compaction) -> Compacted:
    return Compacted(
        step=step,
        ts=ts,
        ok=True,
        trigger=f"{agent}: {c.trigger}" if c.trigger else agent,
        version=None,
        tokens_before=c.tokens_before,
        tokens_after=0,  # the source did not record it; the next reply's prompt tokens show it
        fold=None,
        summariser_usage=Usage(),
        finish_reason="stop",
        cut_off=False,
        message=f"{agent} compacted its conversation into a summary ({c.trigger or 'no trigger recorded'}).",
    )


def _observation(call_id: str, tool: str, result: Result | None) -> Observation:
    if result is None:
        return Observation(
            call_id=call_id,
            tool=tool,
            status="error",
            error_kind="tool_error",
            text="(the source recorded no result for this call)",
        )
    return Observation(
        call_id=call_id,
        tool=tool,
        status=result.status,
        text=result.text,
        error_kind=result.error_kind,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        executed=True,
    )


def _same_import(run_dir: Path, sha256: str) -> bool:
    """A whole import of the same file: its run.json names that sha256 and its summary.json exists."""
    try:
        info = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return False
    imported = info.get("imported") if isinstance(info, dict) else None
    return isinstance(imported, dict) and imported.get("sha256") == sha256 and (run_dir / "summary.json").is_file()
