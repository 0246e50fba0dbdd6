"""Compaction is journaled as model work of its own: a compacted run replays and resumes exactly.

One scripted model answers both the agent and the summariser (its replies in the order they are
asked for), as a real model does when it summarises its own run. The summariser's replies are
`summary_replied` events, so replay and resume hand each reply to the one it was meant for.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.journal.lines import decode, encode
from agent.journal.store import read_events
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import Compact
from core.events import Compacted, ModelReplied, RunResumed, SummaryReplied, ToolIntent
from core.policy import CheckpointPolicy, HarnessPolicy, StopPolicy
from tests.agent.helpers import call

BIG = "".join(f"line {i}: " + "x" * (i % 90) + "\n" for i in range(3000))
TASK = Task(prompt="read big.txt", files={"big.txt": BIG})
MEMORY = '{"goal": "read big.txt", "failed_approaches": [{"approach": "cat", "why": "too long"}]}'


def script() -> list[ScriptedReply]:
    """Nine reads, a compaction due every third step since the last fold. After step 6 the summariser
    replies with no JSON, twice (the reply and its repair), so that compaction fails and is due again
    after step 7."""
    replies = []
    for i in range(1, 10):
        replies.append(call("read_file", path="big.txt", start_line=1 + 50 * i, end_line=40 + 50 * i))
        if i == 6:
            replies += [ScriptedReply(text="I folded the steps.")] * 2
        if i in (3, 7):
            replies.append(ScriptedReply(text=MEMORY))
    return replies + [call("submit", answer="ok")]


def compacted_run(
    tmp_path: Path, prompt: str, snapshots: dict[int, bytes | None] | None = None, max_tokens: int | None = None
) -> Path:
    """`snapshots`: filled with snapshot.json as it was when each event was written (by seq)."""
    cfg = Compact(every_steps=3, keep_recent_steps=1, trigger_tokens=10**9, summariser_prompt=prompt)
    checkpoint = CheckpointPolicy(snapshot_every=1)
    policy = HarnessPolicy(context=[cfg], checkpoint=checkpoint, stop=StopPolicy(max_tokens=max_tokens))

    def keep_snapshot(event) -> None:
        if snapshots is not None:
            snapshot = next((tmp_path / "runs").iterdir()) / "snapshot.json"
            snapshots[event.seq] = snapshot.read_bytes() if snapshot.exists() else None

    summary, run_dir = start(
        RunSpec(TASK, ScriptedModel(script()), policy, tmp_path / "runs", listeners=(keep_snapshot,))
    )
    if max_tokens is None:
        assert summary.stop_reason == "submitted" and summary.compactions == 2
        assert [e.ok for e in read_events(run_dir) if isinstance(e, Compacted)] == [True, False, True]
    return run_dir


def tokens_spent_by(run_dir: Path, step: int) -> int:
    """What the token budget has counted when step `step` ends: its replies so far and the summaries before it."""
    spent = 0
    for e in read_events(run_dir):
        usage = (
            e.reply.usage
            if isinstance(e, ModelReplied) and e.step <= step
            else (e.summariser_usage if isinstance(e, Compacted) and e.step < step else None)
        )
        spent += usage.prompt_tokens + usage.completion_tokens if usage is not None else 0
    return spent


def comparable(run_dir: Path) -> list[dict]:
    """The events as the run would write them again: no seqs, times or durations, no resume notes, and
    an interrupted write's intent once (running it again journals its intent again)."""
    out, intents = [], set()
    for e in read_events(run_dir):
        if isinstance(e, RunResumed) or (isinstance(e, ToolIntent) and e.call_id in intents):
            continue
        if isinstance(e, ToolIntent):
            intents.add(e.call_id)
        data = e.model_dump(mode="json", exclude={"seq", "ts"})
        if "observation" in data:
            data["observation"].pop("duration_s", None)
        out.append(data)
    return out


@pytest.mark.parametrize("prompt", ["fresh", "fork"])
def test_a_compacted_run_replays_with_no_divergence_and_the_same_events(tmp_path, prompt):
    run_dir = compacted_run(tmp_path, prompt)
    events = read_events(run_dir)
    assert sum(isinstance(e, SummaryReplied) for e in events) == 4
    report = replay(run_dir, out=tmp_path / "replays")
    assert report.harness == [] and report.replayed_stop == "submitted"
    assert comparable(report.replay_dir) == comparable(run_dir)


def test_replay_says_so_when_the_harness_asks_the_summariser_something_else(tmp_path):
    run_dir = compacted_run(tmp_path, "fresh")
    lines = (run_dir / "events.jsonl").read_bytes().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if b'"summary_replied"' in line)
    changed = decode(lines[first])
    lines[first] = encode(changed.model_copy(update={"request_sha256": "0" + changed.request_sha256}))  # a valid line
    (run_dir / "events.jsonl").write_bytes(b"".join(lines))
    replayed = read_events(replay(run_dir, out=tmp_path / "replays").replay_dir)
    failed = next(e for e in replayed if isinstance(e, Compacted))
    assert not failed.ok and "differs from the recorded one" in failed.attempts[0]["problem"]


@pytest.mark.parametrize("with_snapshot", [True, False])
@pytest.mark.parametrize("budget", [False, True])
def test_a_run_killed_at_any_event_after_a_compaction_resumes_to_the_same_events(tmp_path, with_snapshot, budget):
    snapshots: dict[int, bytes | None] = {}
    # With a token budget that runs out at step 8 only because the summaries count toward it.
    max_tokens = tokens_spent_by(compacted_run(tmp_path / "free", "fork"), 8) if budget else None
    reference = compacted_run(tmp_path, "fork", snapshots, max_tokens)
    stopped = json.loads((reference / "summary.json").read_text())
    assert (stopped["stop_reason"], stopped["steps"]) == (("token_budget", 8) if budget else ("submitted", 10))
    want = comparable(reference)
    lines = (reference / "events.jsonl").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if '"summary_replied"' in line)
    # A kill after event k leaves the journal's first k lines and the snapshot as it was when event
    # k + 1 was about to be written (or, without one, the state is rebuilt from the journal alone).
    # The tools only read, so the workspace is the same at every point.
    for k in range(first, len(lines) - 1):
        killed = tmp_path / "killed" / str(k)
        killed.mkdir(parents=True)
        shutil.copy(reference / "run.json", killed / "run.json")
        shutil.copytree(reference / "workspace", killed / "workspace")
        (killed / "events.jsonl").write_text("".join(lines[:k]))
        if with_snapshot and snapshots[k + 1] is not None:
            (killed / "snapshot.json").write_bytes(snapshots[k + 1])
        done = resume(killed, model=ScriptedModel(script()))
        assert done.summary is not None and done.summary.stop_reason == stopped["stop_reason"], (k, done.notes)
        assert comparable(killed) == want, f"killed after event {k}: {lines[k - 1][:120]}"
        resumed = next(e for e in read_events(killed) if isinstance(e, RunResumed))
        assert (resumed.from_seq > 0) == with_snapshot  # the snapshot was used, not set aside
