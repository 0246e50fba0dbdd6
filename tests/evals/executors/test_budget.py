"""A batch's cost budget (`--max-cost-usd`): no run starts once what the batch spent, plus what its running
runs are expected to cost, reaches it; the runs not started are recorded as skipped, on both executors."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import pytest

from core.errors import HarnessError
from evals.chess.batch import ChessBatchSpec, play_batch
from evals.chess.players import ModelMaker
from evals.executors import Budget, Done, ExecutorOptions, Job
from tests.evals.executors.priced import dollar_a_game


def batch_spec(folder: Path, budget: float | None, prices: bool = True, **more) -> ChessBatchSpec:
    model, table = dollar_a_game(folder)
    settings = dict(games=5, opponent="random", color="white", analysis_depth=None, out=folder / "runs")
    return ChessBatchSpec(
        make_model=ModelMaker(model), max_cost_usd=budget, prices=table if prices else None, **settings | more
    )


def statuses(folder: Path) -> list[str]:
    return [item["status"] for item in json.loads((folder / "executor.json").read_text())["items"].values()]


def test_a_budget_counts_running_runs_at_the_mean_cost_of_the_finished_ones():
    jobs = deque(Job(str(i), print) for i in range(6))
    budget = Budget(10.0, cost_of=lambda cost: (cost, 0))
    start, skipped = budget.admit(jobs, 3)
    assert [j.key for j in start] == ["0", "1", "2"] and not skipped  # nothing finished: nothing expected yet
    budget.finished(Done("0", 4.0))
    assert budget.admit(jobs, 1) == ([], [])  # 4 + 2 running × 4 reaches 10: wait for them
    budget.finished(Done("1", 1.0))
    start, skipped = budget.admit(jobs, 2)  # 5 + 1 × 2.5 < 10: one more, then 5 + 2 × 2.5 reaches 10
    assert [j.key for j in start] == ["3"] and not skipped
    budget.finished(Done("2", 4.0))
    budget.finished(Done("3", 2.0))
    assert budget.admit(jobs, 2) == ([], [Job("4", print), Job("5", print)])  # spent 11, nothing runs
    assert budget.record().model_dump() == {
        "cost_usd": 11.0,
        "unpriced_calls": 0,
        "max_cost_usd": 10.0,
        "skipped_for_budget": 2,
    }


def test_a_batch_starts_no_game_once_its_budget_is_spent_and_resume_with_more_plays_on(tmp_path):
    batch, folder = play_batch(batch_spec(tmp_path, 1.5))
    assert [g.game for g in batch.games] == [1, 2] and [g.cost_usd for g in batch.games] == [1.0, 1.0]
    saved = json.loads((folder / "batch.json").read_text())
    assert saved["cost"] == {"cost_usd": 2.0, "unpriced_calls": 0, "max_cost_usd": 1.5, "skipped_for_budget": 3}
    assert statuses(folder) == ["done", "done", "skipped", "skipped", "skipped"]
    assert len([p for p in folder.iterdir() if p.is_dir()]) == 2  # the skipped games left nothing

    again, _ = play_batch(batch_spec(tmp_path, 3.5, resume=folder))  # the kept games' $2 count
    assert [g.game for g in again.games] == [1, 2, 3, 4]
    assert again.cost.cost_usd == 4.0 and again.cost.skipped_for_budget == 1
    assert statuses(folder) == ["reused", "reused", "done", "done", "skipped"]


def test_a_batch_without_a_budget_records_its_cost(tmp_path):
    batch, folder = play_batch(batch_spec(tmp_path, None, games=2))
    assert json.loads((folder / "batch.json").read_text())["cost"] == batch.cost.model_dump()
    assert batch.cost.cost_usd == 2.0 and batch.cost.max_cost_usd is None


def test_a_budget_for_a_model_without_a_price_fails_before_the_batch_has_a_folder(tmp_path):
    with pytest.raises(HarnessError, match=r"--max-cost-usd = 1.5 is set.*no price for model 'scripted:.*--prices"):
        batch_spec(tmp_path, 1.5, prices=False)
    assert not (tmp_path / "runs").exists()


def test_the_ray_executor_keeps_to_the_budget_too(ray_cluster, tmp_path):
    # Two slots: games 1 and 2 start together (nothing spent yet); after them $2 reaches the budget.
    executor = ExecutorOptions(kind="ray", address=ray_cluster.address)
    batch, folder = play_batch(batch_spec(tmp_path, 1.5, executor=executor))
    assert [g.game for g in batch.games] == [1, 2]
    assert batch.cost.cost_usd == 2.0 and batch.cost.skipped_for_budget == 3
    assert statuses(folder) == ["done", "done", "skipped", "skipped", "skipped"]
