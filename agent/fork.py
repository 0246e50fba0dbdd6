"""Fork a run: a new run that begins with a finished run's steps 1..N and goes on under another policy, model or
seed, in a world rebuilt as the parent's after step N.

    made = fork(Path("runs/20260101-120000-fix-1a2b"), at_step=15, policy=load_policy("compact_naive"))

The fork is an ordinary run directory (in `out`, by default beside the parent): its run.json is the parent's with
the fork's policy, model, seed and price, and `fork` (the parent's id and folder, the branch step, what changed);
its events.jsonl begins with the parent's events of steps 0..N (agent.recovery.branch), with the artifacts they
name. Nothing is created unless the parent can be forked there: a finished step, a journal without damage, a run
no process holds. Then the fork is resumed: its branch is built (agent.branch: the world rebuilt and checked, the
context folded again under its policy) and its loop goes on, so a fork killed at any moment is finished by
`harness resume`, as any run is.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent.journal.store import (
    ForkOrigin,
    Journal,
    RunInfo,
    make_folder,
    new_run_id,
    read_run_info,
    scan,
    write_json_atomic,
)
from agent.journal.summary import Summary
from agent.journal.tools import PROGRAM_TOOLS, recorded_tools
from agent.models import client_for
from agent.models.base import ModelClient
from agent.models.pricing import price_for
from agent.models.shared import shared_engines
from agent.models.windows import context_window
from agent.recovery.branch import check_branch_point, inherited, outside_write, refuse_outside_write
from agent.resume import resume
from agent.run.stopping import StopRule
from agent.session import SandboxFactory
from core.errors import HarnessError
from core.events import Event
from core.policy import HarnessPolicy
from tools.base import Registry

ARTIFACT = re.compile(r"artifacts/([A-Za-z0-9_.-]+)")
ALWAYS_COPIED = ("memory_start.jsonl",)  # the memory a run started from: a fork starts from the same


@dataclass
class Fork:
    run_dir: Path
    summary: Summary | None
    notes: list[str] = field(default_factory=list)


def fork(
    parent_dir: Path,
    at_step: int | str,
    policy: HarnessPolicy | None = None,
    model: str | ModelClient | None = None,
    seed: int | None = None,
    out: Path | None = None,
    tools: Registry | None = None,
    sandbox: SandboxFactory | None = None,
    stop_rules: Sequence[StopRule] = (),
    listeners: Sequence[Callable[[Event], None]] = (),
    run_id: str | None = None,
) -> Fork:
    """Fork `parent_dir` after step `at_step` (a number, or `before-first-compaction`) and run the fork to a stop.
    `policy`, `model` and `seed` default to the parent's; `tools` and `sandbox` are for runs whose tools or sandbox live in code (a chess game's)."""
    parent_dir = Path(parent_dir).resolve()
    info = read_run_info(parent_dir)
    step, events = branch_point(parent_dir, info, at_step)  # before a model loads: a refusal costs nothing
    timeout_s = (policy or HarnessPolicy.model_validate(info.policy)).dispatch.tool_timeout_s
    with client_for(model or info.model, timeout_s) as client:  # one made from a model string is closed here
        run_dir = make_fork(parent_dir, info, step, events, policy, client, seed, out, run_id)
        done = resume(run_dir, client, tools, sandbox, listeners, stop_rules, first_branch=True)
    return Fork(run_dir, done.summary, done.notes)


def family(
    parent_dir: Path,
    at_step: int | str,
    policies: Sequence[HarnessPolicy | None],
    seeds: Sequence[int | None],
    out: Path,
    model: str | None = None,
    done: Callable[[Fork], None] = lambda made: None,
) -> list[Fork]:
    """A fork of `parent_dir` for every policy (None: the parent's) and seed, in `out`/<policy name>/: one batch
    folder per policy, whose forks `harness ab` pairs by parent, branch step and seed. `done` hears of each."""
    info = read_run_info(parent_dir)
    names = [p.name if p is not None else str(info.policy.get("name", "parent")) for p in policies]
    if len(set(names)) != len(names):
        raise HarnessError(f"Two policies of the family have the same name ({', '.join(names)}): name them apart.")
    made = []
    with shared_engines():  # a local model's engine is loaded once for the family
        for policy, name in zip(policies, names, strict=True):
            for seed in seeds:
                made.append(fork(parent_dir, at_step, policy, model, seed, Path(out) / name))
                done(made[-1])
    return made


def branch_point(parent_dir: Path, info: RunInfo, at_step: int | str) -> tuple[int, list[Event]]:
    """The step a fork of `parent_dir` branches after and the events it inherits; HarnessError when the parent
    cannot be forked there."""
    if info.imported is not None:
        raise HarnessError(
            f"Run {info.run_id} was imported from {info.imported.get('format', 'another harness')}: its world was "
            "never in a sandbox of ours, so a fork of it has none to start from. `harness rerender` shows its "
            "prompts under another context policy; a fork needs a run the harness made."
        )
    if info.sandbox not in ("local", "docker", "none"):
        raise HarnessError(
            f"Run {info.run_id} used a custom sandbox ({info.sandbox}), whose world the harness cannot rebuild; "
            "fork it from code (agent.fork.fork), passing the same sandbox factory."
        )
    found = scan(parent_dir)
    _, step = check_branch_point(parent_dir, found, str(at_step))
    write = outside_write(found.events, step, mcp_servers(parent_dir, info))
    if write is not None:
        raise refuse_outside_write(info.run_id, step, write)
    return step, inherited(found.events, step)


def mcp_servers(run_dir: Path, info: RunInfo) -> set[str]:
    """The MCP servers a run's tools came from: its policy's, and those its recorded tools name."""
    named = {str(s.get("name")) for s in info.policy.get("mcp", [])}
    recorded = [*(recorded_tools(run_dir) or ()), *(recorded_tools(run_dir, PROGRAM_TOOLS) or ())]
    return named | {r.server for r in recorded if r.server != "builtin"}


def make_fork(
    parent_dir: Path,
    info: RunInfo,
    at_step: int,
    events: Sequence[Event],
    policy: HarnessPolicy | None,
    client: ModelClient,
    seed: int | None,
    out: Path | None,
    run_id: str | None = None,
) -> Path:
    """The fork's run directory with its run.json and inherited journal, not branched yet."""
    before = HarnessPolicy.model_validate(info.policy)
    after = policy or before
    if seed is not None:
        after = after.model_copy(update={"model": after.model.model_copy(update={"seed": seed})})
    window = context_window(client, after.model)
    origin = ForkOrigin(
        parent=info.run_id,
        parent_dir=str(parent_dir),
        at_step=at_step,
        inherited=len(events),
        reshape=(after.context, after.overflow) != (before.context, before.overflow),
        changes=changes(info, before, after, client.name),
    )
    forked = info.model_copy(
        update={
            "run_id": run_id or new_run_id(f"fork{at_step}-{info.task.get('id', 'task')}"),
            "model": client.name,
            "policy": after.model_dump(mode="json"),
            "seed": after.model.seed if seed is not None else info.seed,
            "context_window": window,
            "price": price_for(client.name, None, after.stop.max_cost_usd) if client.name != info.model else info.price,
            "started_at": datetime.now(UTC).isoformat(),
            "tools": [],
            "fork": origin,
            # The kept memory (`--memory DIR`) is read, never written: the parent saved its steps' notes there,
            # and a fork's own are an experiment from a past point, kept in its own folder and journal.
            "memory": info.memory.model_copy(update={"writable": False}) if info.memory is not None else None,
        }
    )
    return place(Path(out) if out is not None else parent_dir.parent, forked, events, parent_dir)


def place(out: Path, info: RunInfo, events: Sequence[Event], parent_dir: Path) -> Path:
    """The fork's folder, made whole in a hidden folder beside its place and renamed into it: a process killed
    while making it leaves no half-made run in its place (at most a hidden folder)."""
    final = out / info.run_id
    if final.exists():
        raise HarnessError(f"The run directory {final} already exists; pick another --out or run id.")
    # Made as every run directory is (under the umask), not as a private temporary folder: a command in a local
    # sandbox sees the run directory as its workspace's parent, and a write run again must see what the parent saw.
    making = make_folder(make_folder(out, "folder", exist_ok=True) / f".{info.run_id}.{secrets.token_hex(4)}", "folder")
    try:
        journal = Journal(making)
        try:
            journal.extend(e.model_copy(update={"seq": 0}) for e in events)
        finally:
            journal.close()
        copy_artifacts(parent_dir, making, events)
        write_json_atomic(making / "run.json", info.model_dump(mode="json"))  # last: until now, not a run
        os.rename(making, final)
    except BaseException:
        shutil.rmtree(making, ignore_errors=True)
        raise
    return final


def copy_artifacts(parent_dir: Path, run_dir: Path, events: Sequence[Event]) -> None:
    """The parent's artifacts that the inherited events name (a cut output's full text), and the memory the
    parent started from."""
    named = {m for e in events for m in ARTIFACT.findall(e.model_dump_json())} | set(ALWAYS_COPIED)
    for name in sorted(named):
        source = parent_dir / "artifacts" / name
        if source.is_file():
            shutil.copy2(source, run_dir / "artifacts" / name)


def changes(info: RunInfo, before: HarnessPolicy, after: HarnessPolicy, model: str) -> list[str]:
    """What the fork changed, in words: the policy (and which of its parts), the model, the seed."""
    said = []
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    parts = [k for k in new if k not in ("name", "model") and old.get(k) != new[k]]
    if before.name != after.name or parts:
        which = f" ({', '.join(parts)} differ)" if parts else ""
        said.append(f"policy {before.name} -> {after.name}{which}")
    if model != info.model:
        said.append(f"model {info.model} -> {model}")
    params = [k for k in new["model"] if k != "seed" and old["model"].get(k) != new["model"][k]]
    if params:
        said.append(f"model parameters differ: {', '.join(params)}")
    if before.model.seed != after.model.seed:
        said.append(f"seed {before.model.seed} -> {after.model.seed}")
    return said
