"""snapshot.json: the run state needed to continue, written every K steps and at every stop.

A snapshot holds the state's counters and budgets (everything in RunState but the
task, which run.json has, and the history, which the journal has), the seq of the
last event it covers, the recent message window, the calls waiting for approval,
the newest artifact references and the sandbox handle. It never holds the
transcript, so its size does not grow with the conversation. Written atomically:
a reader sees the previous snapshot or the new one, never half of one.
"""

from __future__ import annotations

import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from agent.journal.store import Journal, write_json_atomic
from agent.run.state import RunState
from agent.run.stopping import RESUMABLE, Stop
from core.types import Message

SNAPSHOT = "snapshot.json"
WINDOW = 8  # messages: enough for a resume to check the rebuilt history against, and bounded
NEWEST_ARTIFACTS = 5
# run.json has the task; the journal has the history and the compaction folds; `started` is per process.
NOT_SAVED = ("task", "history", "folds", "started")


class Snapshot(BaseModel):
    version: int = 1
    written_at: float
    last_seq: int  # every event up to this seq is folded into `state`; none after it is
    state: dict[str, Any]  # RunState's fields but NOT_SAVED
    wall_s: float  # time the run has spent so far, across processes
    window: list[Message]  # the newest messages of the history at last_seq
    pending: list[str] = []  # calls waiting for approval when the run stopped
    stop: str | None = None  # the stop reason, when written at a stop
    artifacts: list[str] = []  # the newest artifact references, relative to the run dir
    artifact_count: int = 0
    sandbox: dict[str, Any] = {}  # kind and workdir; a container's id, cwd and exported env: enough to reconnect
    working_memory: dict[str, Any] | None = None  # the newest compaction's memory, for people and tools to read


def take(
    state: RunState, journal: Journal, sandbox: object, live_container: bool, stop: Stop | None = None
) -> Snapshot:
    saved = {f.name: getattr(state, f.name) for f in fields(state) if f.name not in NOT_SAVED}
    artifacts = sorted(p.name for p in journal.artifacts.iterdir()) if journal.artifacts.exists() else []
    return Snapshot(
        written_at=time.time(),
        last_seq=state.settled_seq,
        state=TypeAdapter(dict[str, Any]).dump_python(saved, mode="json"),
        wall_s=round(state.wall_s(), 3),
        window=state.history[-WINDOW:],
        pending=list(stop.outcome.get("pending", [])) if stop is not None else [],
        stop=stop.reason if stop is not None else None,
        artifacts=[f"artifacts/{name}" for name in artifacts[-NEWEST_ARTIFACTS:]],
        artifact_count=len(artifacts),
        sandbox=handle(sandbox, live_container),
        working_memory=folds[-1].memory.model_dump(mode="json") if (folds := getattr(state, "folds", None)) else None,
    )


def handle(sandbox: object, live_container: bool) -> dict[str, Any]:
    """What a resume needs to find the sandbox again and give a fresh shell the old one's place."""
    out: dict[str, Any] = {"kind": type(sandbox).__name__, "workdir": str(getattr(sandbox, "workdir", ""))}
    if live_container:
        out["container_id"] = sandbox.container_id  # type: ignore[attr-defined]
        try:
            shell = sandbox.shell_state()  # type: ignore[attr-defined]
        except Exception:  # a shell that cannot say its state: a resume starts one in the workdir
            return out
        out |= {"cwd": shell.cwd, "env": shell.env}
    return out


def _container(sandbox: object) -> bool:
    """A live container sandbox (sandboxes.docker): it has an id to journal and a filesystem to save."""
    return getattr(sandbox, "container_id", None) is not None and sandbox.alive()  # type: ignore[attr-defined]


def write_snapshot(state: RunState, journal: Journal, sandbox: object, stop: Stop | None = None) -> Snapshot:
    """The snapshot, and for a container at a step (not a stop) a filesystem checkpoint beside it:
    a resume that finds the container gone starts again from there."""
    live = _container(sandbox)  # one question to the engine per snapshot
    if (stop is None or stop.reason in RESUMABLE) and live:
        from sandboxes.docker_runs import checkpoint

        checkpoint(sandbox, state.step)  # type: ignore[arg-type]
    snap = take(state, journal, sandbox, live, stop)
    write_json_atomic(journal.dir / SNAPSHOT, snap.model_dump(mode="json"))
    return snap


def keep_for_forks(step: int, sandbox: object, every: int | None) -> None:
    """Every `every` steps (checkpoint.fork_every), a container's workspace saved as a checkpoint kept after the
    run ends, for `harness fork` to start from."""
    if every and step % every == 0 and _container(sandbox):
        from sandboxes.docker_runs import checkpoint

        checkpoint(sandbox, step, kept=True)  # type: ignore[arg-type]


def load_snapshot(run_dir: Path) -> tuple[Snapshot | None, str | None]:
    """The snapshot, or None and why not (a resume then folds the journal from its start)."""
    path = Path(run_dir) / SNAPSHOT
    try:
        return Snapshot.model_validate_json(path.read_bytes()), None
    except FileNotFoundError:
        return None, "no snapshot.json: rebuilding the state from the start of the journal"
    except (OSError, ValidationError) as e:
        return (
            None,
            f"snapshot.json is unreadable ({str(e).splitlines()[0]}): rebuilding the state from the start of the journal",
        )


def state_from(snap: Snapshot, state: RunState) -> RunState:
    """A RunState with the snapshot's counters and the given state's task and history."""
    known = {f.name for f in fields(RunState)}
    data = {k: v for k, v in snap.state.items() if k in known} | {"task": state.task, "history": state.history}
    restored = TypeAdapter(RunState).validate_python(data)
    restored.started = time.monotonic() - snap.wall_s
    return restored
