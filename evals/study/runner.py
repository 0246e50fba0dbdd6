"""Run a study: at each point (replicas × router × runs in flight × cache size), each policy's runs of
every task and seed, in threads against the point's engines, into one batch folder per policy; then
the pairs between policies at each point and between routers for each policy, study.json and study.html."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.journal.integrity import check_run
from agent.journal.store import make_folder, new_run_id, read_run_info, write_json_atomic
from agent.models.pricing import load_prices
from agent.session import RunSpec, SandboxSpec, start
from core.errors import HarnessError
from core.policy import HarnessPolicy
from evals.ab.html import _finite
from evals.ab.records import RunRecord, load_record
from evals.chess.game import GameRules
from evals.chess.runner import play_game
from evals.executors import Done, ExecutorOptions, Job, run_jobs
from evals.loops import captures
from evals.study.grid import CAPTURES, CHESS, Setting, StudySpec, settings, study_policy, study_task
from evals.study.measure import PairFigures, PolicyFigures, RunRow, pair_figures, policy_figures, run_row
from evals.study.target import EngineCounters, Target, checkpoint_for, open_target, serving


@dataclass(frozen=True)
class Cell:
    task: str
    seed: int


@dataclass
class Point:
    concurrency: int
    kv_cache_mb: int | None
    # what the KV cache holds (the engine's stats, or a server's /metrics; summed over replicas)
    cache_tokens: int | None
    policies: list[PolicyFigures]
    pairs: list[PairFigures]
    runs: list[RunRow]
    replicas: int = 1
    router: str | None = None  # None: one engine

    @property
    def label(self) -> str:
        return Setting(self.replicas, self.router, self.concurrency, self.kv_cache_mb).label


@dataclass
class RouterPairs:
    """One policy's runs under every two routers at the same replicas count, runs in flight and cache size."""

    policy: str
    replicas: int
    concurrency: int
    kv_cache_mb: int | None
    pairs: list[PairFigures]


@dataclass
class Study:
    study_id: str
    spec: StudySpec
    points: list[Point]
    failures: list[str]  # runs the harness could not finish (it raised), by cell
    router_pairs: list[RouterPairs] = field(default_factory=list)


def run_cell(target: Target, cell: Cell, policy: HarnessPolicy, spec: StudySpec, out_dir: Path) -> Path:
    """A study job: one run of one task and seed under one policy (the run samples with the seed); returns its run
    directory."""
    if spec.max_steps is not None:
        policy = policy.model_copy(update={"stop": policy.stop.model_copy(update={"max_steps": spec.max_steps})})
    if spec.max_tokens is not None:
        policy = policy.model_copy(update={"model": policy.model.model_copy(update={"max_tokens": spec.max_tokens})})
    prices = Path(spec.prices) if spec.prices else None
    with closing(target.client(cell.task)) as client:
        sandbox = SandboxSpec.parse(spec.sandbox)
        # A chess task needs no sandbox of its own; run_code's programs run in the study's.
        board_box = sandbox if policy.dispatch.mode != "calls" else SandboxSpec(kind="none")
        if cell.task == CAPTURES:
            return captures.play(client, policy, out_dir, board_box, cell.seed, prices).run_dir
        if cell.task == CHESS:
            color = "white" if cell.seed % 2 == 0 else "black"  # the same game for every policy: paired by seed
            # A small model resigns at once: no resign tool.
            rules = GameRules(max_plies=spec.max_plies, max_replies=spec.max_replies, allow_resign=False)
            game = play_game(
                client, spec.opponent, color, policy, out_dir, cell.seed, rules, None, prices=prices, sandbox=board_box
            )
            return game.run_dir
        task = study_task(cell.task)
        assert task is not None
        _, run_dir = start(RunSpec(task, client, policy, out_dir, sandbox=sandbox, seed=cell.seed, prices=prices))
        return run_dir


def run_policy(
    target: Target,
    policy: HarnessPolicy,
    cells: list[Cell],
    spec: StudySpec,
    concurrency: int,
    batch: Path,
    study_dir: Path,
    failures: list[str],
    on_run: Callable[[str], None],
) -> tuple[list[RunRecord], list[RunRow], float, EngineCounters]:
    before = target.read()
    by_key = {f"{c.task}#{c.seed}": c for c in cells}
    jobs = [Job(key, run_cell, (target, c, policy, spec)) for key, c in by_key.items()]
    done_runs: list[tuple[Cell, Path]] = []

    def arrived(done: Done) -> None:
        if done.error is not None:
            failures.append(f"{policy.name} {done.key}: {done.error}")
        else:
            done_runs.append((by_key[done.key], done.result))
        on_run(f"{policy.name} {done.key}: {'failed' if done.error else 'done'}")

    t0 = time.perf_counter()
    run_jobs(jobs, batch, ExecutorOptions(kind="local", workers=concurrency), arrived)
    wall_s = time.perf_counter() - t0
    counters = target.counters(before)
    prices = load_prices(spec.prices)
    records, rows = [], []
    for _, run_dir in sorted(done_runs, key=lambda x: (x[0].task, x[0].seed)):
        record = load_record(run_dir, prices)
        stop = check_run(run_dir, read_run_info(run_dir)).summary.stop_reason
        records.append(record)
        rows.append(run_row(record, run_dir, study_dir, stop))
    return records, rows, wall_s, counters


def run_study(
    spec: StudySpec, out: Path, resamples: int = 2000, on_run: Callable[[str], None] = lambda _: None
) -> tuple[Study, Path]:
    """Every point of the grid, every policy one after another on a fresh engine (or, with replicas,
    on the point's replicas with their caches reset), its runs in threads."""
    policies = [study_policy(p) for p in spec.policies]
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        raise HarnessError(
            f"Two of the policies share a name ({', '.join(names)}); runs are told apart by policy name."
        )
    tasks = {t: study_task(t) for t in spec.tasks}  # every name checked before anything runs
    cells = [Cell(t, s) for t in tasks for s in spec.seeds]
    folder = Path(out) / new_run_id("study")
    make_folder(folder, "study folder")
    study = Study(folder.name, spec, [], [])
    # (policy, replicas, runs in flight, cache size) -> router -> that policy's runs there
    by_router: dict[tuple, dict[str, tuple[list[RunRecord], list[RunRow]]]] = {}
    with checkpoint_for(spec.model) as checkpoint:
        for setting in settings(spec):
            records: dict[str, list[RunRecord]] = {}
            rows: dict[str, list[RunRow]] = {}
            figures, cache_tokens = [], None
            with serving(spec, setting) as model:
                for policy in policies:
                    batch = folder / f"{setting.label}-{policy.name}"
                    with open_target(model, checkpoint, setting, spec) as target:
                        records[policy.name], rows[policy.name], wall_s, counters = run_policy(
                            target, policy, cells, spec, setting.concurrency, batch, folder, study.failures, on_run
                        )
                    cache_tokens = counters.cache_tokens
                    figures.append(policy_figures(policy.name, rows[policy.name], counters, wall_s))
            runs = [r for name in rows for r in rows[name]]
            pairs = pair_figures(records, rows, resamples)
            study.points.append(
                Point(
                    setting.concurrency,
                    setting.kv_cache_mb,
                    cache_tokens,
                    figures,
                    pairs,
                    runs,
                    setting.replicas,
                    setting.router,
                )
            )
            if setting.router is not None:
                for name in names:
                    key = (name, setting.replicas, setting.concurrency, setting.kv_cache_mb)
                    by_router.setdefault(key, {})[setting.router] = (records[name], rows[name])
                study.router_pairs = router_pairs(by_router, resamples)
            write_study(study, folder)
    return study, folder


def router_pairs(by_router: dict[tuple, dict[str, tuple[list[RunRecord], list[RunRow]]]], resamples: int):
    """Each policy's runs paired by task and seed between every two routers it ran under at the same
    replicas count, runs in flight and cache size."""
    out = []
    for (policy, replicas, concurrency, kv_cache_mb), runs in by_router.items():
        if len(runs) < 2:
            continue
        records = {router: r for router, (r, _) in runs.items()}
        rows = {router: r for router, (_, r) in runs.items()}
        out.append(RouterPairs(policy, replicas, concurrency, kv_cache_mb, pair_figures(records, rows, resamples)))
    return out


def study_json(study: Study) -> dict:
    return _finite(
        {
            "study_id": study.study_id,
            "spec": asdict(study.spec),
            "failures": study.failures,
            "points": [{**asdict(p), "label": p.label} for p in study.points],
            "router_pairs": [asdict(r) for r in study.router_pairs],
        }
    )


def write_study(study: Study, folder: Path) -> None:
    from evals.study.report import render_study

    write_json_atomic(folder / "study.json", study_json(study))
    render_study(study, folder)
