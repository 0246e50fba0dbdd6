"""kill -9 (and SIGTERM, SIGINT) at a few seeded moments and resume, in every cell of sandbox × context policy ×
kind of write; then replay every resumed run.

Real subprocesses, real SIGKILL, real containers and a real stdio MCP server (see crash_driver).
Every killed-and-resumed run must equal the uninterrupted one and replay with no divergence (its
recovery replayed too), and no container of the cell's runs may be left once they finished. In the
overflowing cell the kills are aimed: right after an emergency fold's summary, and right after a
recovery, before its step's model call. In the fork cells the runs are forks of an uninterrupted run:
one kill is aimed inside the branch, while the parent's writes run again, the other in the fork's own steps. In
the signal cells one stop is aimed at a write: the signal comes as its intent is journaled. In a slow-model cell
one stop is aimed inside the model's wait for a reply.
benchmarks/bench_crash_matrix.py runs many more kills.
"""

from __future__ import annotations

import os

import pytest

from tests.agent.recovery import crash_driver
from tests.agent.recovery.crash_driver import AIMS, CELLS, LATER_CELLS
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once, for the docker cells)

pytestmark = pytest.mark.slow

STEPS = 3
KILLS = 2
# Of the cells stopped by a signal, CI runs two (SIGTERM locally, SIGINT in Docker); the benchmark runs them all.
SIGNALLED = ("local/append-only/shell/TERM", "docker/append-only/shell/INT")
# Of the later cells, CI runs two of the fast ones (SIGTERM in a slow model's call, a followed MCP resource).
LATER = ("local/append-only/shell/slow-model/TERM", "local/append-only/mcp-resource")
IN_CI = [c for c in CELLS if (c not in LATER_CELLS and (c.stop == "KILL" or c.name in SIGNALLED)) or c.name in LATER]


@pytest.mark.parametrize(
    "cell", [pytest.param(c, id=c.name, marks=[pytest.mark.docker] if c.sandbox == "docker" else []) for c in IN_CI]
)
def test_a_few_seeded_kills_then_resume_match_the_uninterrupted_run_and_replay(request, tmp_path, cell):
    if cell.sandbox == "docker":
        request.getfixturevalue("docker_ready")
    reference, took = crash_driver.run_once(cell, tmp_path / "reference", STEPS)
    assert crash_driver.counter(reference) == list(range(1, STEPS + 1))

    seed = int(os.environ.get("CRASH_SEED", CELLS.index(cell)))
    stats = crash_driver.torture(tmp_path / "killed", cell, KILLS, STEPS, seed, window_s=took)
    assert stats.kills == KILLS and stats.runs, f"seed {seed}"
    for run_dir in stats.runs:
        assert crash_driver.problems(run_dir, reference) == [], f"seed {seed}, {run_dir}"
        assert crash_driver.duplicated(run_dir) == crash_driver.lost(run_dir, reference) == 0, f"seed {seed}, {run_dir}"
        assert crash_driver.replay_divergences(run_dir, tmp_path / "replays") in (None, 0), f"seed {seed}, {run_dir}"
    if cell.context in AIMS:
        assert sum(crash_driver.kills_in_recoveries(r) for r in stats.runs) == KILLS, f"seed {seed}"
    if cell.fork:  # one kill aimed inside the branch's rebuild of the parent's world, one in the fork's own steps
        assert sum(crash_driver.kills_in_branches(r) for r in stats.runs) >= 1, f"seed {seed}"
        assert sum(crash_driver.kills_after_branches(r) for r in stats.runs) >= 1, f"seed {seed}"
    if cell.stop != "KILL" and cell.model == "instant":  # the aimed stop left its write for the resume to settle
        assert sum(crash_driver.kills_inside_tools(r) for r in stats.runs) >= 1, f"seed {seed}"
    if cell.model == "slow":  # one stop aimed inside the model's wait: the resume asks that reply again
        assert sum(crash_driver.kills_in_model_calls(r) for r in stats.runs) >= 1, f"seed {seed}"
    if cell.sandbox == "docker":
        assert crash_driver.containers_left(tmp_path) == 0, f"seed {seed}"
