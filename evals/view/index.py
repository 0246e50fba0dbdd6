"""What the viewer lists: every batch folder and run directory under a root, each run with its status, outcome,
steps, cost and drift, kept current as runs go on.

A run's row is remembered under its journal's size and time and its summary's and grade's, so a poll re-reads
only the runs that changed. Reading a run whole (its findings need the journal) takes a while, so one listing
reads runs whole for at most BUDGET_S seconds, running ones first; the rest are listed from run.json and
summary.json alone, marked pending, and read whole by the next polls: a folder of hundreds of runs lists at once
and fills in its drift over the following seconds.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.journal.store import read_run_info
from agent.journal.summary import Summary
from agent.models.pricing import load_prices
from evals.reports.detectors import DRIFT
from evals.reports.load import RunData, is_run_dir, load_run
from evals.reports.outcome import graded, outcome_label, success

DEPTH = 3  # how deep under the root batch folders and runs are looked for
BUDGET_S = 0.5  # of one listing, spent reading changed runs whole


@dataclass(frozen=True)
class Row:
    path: str  # relative to the root: what the page asks for
    batch: str  # the folder holding it, relative ("" for a run at the root)
    run_id: str
    task_id: str
    model: str
    policy: str
    status: str  # "running", or the stop reason
    outcome: str
    verdict: bool | None
    steps: int
    cost_usd: float | None
    findings: int | None  # None: not read whole yet (pending)
    drift: int | None
    drift_tokens: int | None
    started_at: str
    imported: str  # the source agent of an imported run, else ""
    pending: bool = False


def run_dirs(root: Path) -> list[Path]:
    """Every run directory at most DEPTH levels under `root` (itself included), in a stable order."""
    found: list[Path] = []
    level = [root]
    for _ in range(DEPTH + 1):
        nxt = []
        for folder in level:
            if is_run_dir(folder):
                found.append(folder)
            elif folder.is_dir():
                nxt += sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        level = nxt
    return found


class Index:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.prices = load_prices()
        self.rows: dict[Path, tuple[tuple[Any, ...], Row]] = {}
        self.glanced: dict[Path, tuple[tuple[Any, ...], Row]] = {}  # pending rows, until read whole

    def listing(self) -> dict[str, Any]:
        dirs = run_dirs(self.root)
        deadline = time.monotonic() + BUDGET_S
        made: dict[Path, Row] = {}
        for d in sorted(dirs, key=lambda d: (d / "summary.json").is_file()):  # running runs first
            made[d] = self.row(d, whole=time.monotonic() < deadline)
        rows = [made[d] for d in dirs]
        batches: dict[str, dict[str, Any]] = {}
        for r in rows:
            b = batches.setdefault(r.batch, {"path": r.batch, "runs": 0, "running": 0, "cost_usd": 0.0, "drift": 0})
            b["runs"] += 1
            b["running"] += r.status == "running"
            b["cost_usd"] = None if b["cost_usd"] is None or r.cost_usd is None else b["cost_usd"] + r.cost_usd
            b["drift"] += r.drift or 0
            b["pending"] = b.get("pending", 0) + r.pending
        for path, b in batches.items():
            b["meta"] = _batch_meta(self.root / path)
        return {"root": str(self.root), "batches": list(batches.values()), "runs": [asdict(r) for r in rows]}

    def row(self, run_dir: Path, whole: bool = True) -> Row:
        key = _stamp(run_dir)
        kept = self.rows.get(run_dir)
        if kept is not None and kept[0] == key:
            return kept[1]
        if not whole:
            seen = self.glanced.get(run_dir)
            if seen is None or seen[0] != key:
                seen = self.glanced[run_dir] = (key, self.glance(run_dir))
            return seen[1]
        self.glanced.pop(run_dir, None)
        row = self.read(run_dir)
        self.rows[run_dir] = (key, row)
        return row

    def glance(self, run_dir: Path) -> Row:
        """A row from run.json and summary.json alone: no findings yet."""
        info = read_run_info(run_dir)
        try:
            summary: Summary | None = graded(
                run_dir, Summary.model_validate_json((run_dir / "summary.json").read_text())
            )
        except (OSError, ValueError):
            summary = None
        imported = bool(info.imported)
        rel = run_dir.relative_to(self.root)
        return Row(
            path=str(rel),
            batch=str(rel.parent) if str(rel.parent) != "." else "",
            run_id=info.run_id,
            task_id=str(info.task.get("id", "")),
            model=info.model,
            policy=str(info.policy.get("name", "")),
            status=summary.stop_reason if summary is not None else "running",
            outcome=outcome_label(summary, imported) if summary is not None else "running",
            verdict=success(summary, imported) if summary is not None else None,
            steps=summary.steps if summary is not None else 0,
            cost_usd=summary.cost_usd if summary is not None else None,
            findings=None,
            drift=None,
            drift_tokens=None,
            started_at=info.started_at,
            imported=str((info.imported or {}).get("agent") or ""),
            pending=True,
        )

    def read(self, run_dir: Path) -> Row:
        run = load_run(run_dir, self.prices)
        s = run.summary
        drift = [f for f in run.findings if f.detector in DRIFT]
        rel = run_dir.relative_to(self.root)
        return Row(
            path=str(rel),
            batch=str(rel.parent) if str(rel.parent) != "." else "",
            run_id=s.run_id,
            task_id=s.task_id,
            model=s.model,
            policy=s.policy,
            status=_status(run),
            outcome=run.outcome,
            verdict=run.verdict,
            steps=s.steps,
            cost_usd=run.cost if run.cost is not None else s.cost_usd,
            findings=len(run.findings),
            drift=len(drift),
            drift_tokens=sum(f.tokens for f in drift),
            started_at=run.info.started_at,
            imported=str((run.info.imported or {}).get("agent") or ""),
        )

    def load(self, rel: str) -> RunData:
        run_dir = (self.root / rel).resolve()
        if self.root not in (run_dir, *run_dir.parents) or not is_run_dir(run_dir):
            raise FileNotFoundError(rel)
        return load_run(run_dir, self.prices)


def _status(run: RunData) -> str:
    return "running" if run.summary.stop_reason == "unfinished" else run.summary.stop_reason


def _stamp(run_dir: Path) -> tuple[Any, ...]:
    out: list[Any] = []
    for name in ("events.jsonl", "summary.json", "grade.json"):
        try:
            st = (run_dir / name).stat()
            out += [st.st_size, st.st_mtime_ns]
        except OSError:
            out += [None, None]
    return tuple(out)


def _batch_meta(folder: Path) -> dict[str, Any]:
    """What a batch.json says of the batch (model, policy, the import's source), where there is one."""
    try:
        data = json.loads((folder / "batch.json").read_text())
    except (OSError, ValueError):
        return {}
    return {
        k: data[k]
        for k in ("model", "policy", "games", "instances")
        if k in data and not isinstance(data[k], list | dict)
    }
