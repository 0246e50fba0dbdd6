"""The viewer's listing: a run is listed at once from its run.json and summary.json, and read whole (findings,
drift) within each listing's time budget, running runs first; a poll re-reads only what changed."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from evals.view import index
from evals.view.index import Index
from tests.agent.helpers import call


def make(out, n: int) -> None:
    for i in range(n):
        replies = [call("shell", command="ls"), call("shell", command="ls"), call("submit", answer="x")]
        start(RunSpec(Task(id=f"t{i}", prompt="go"), ScriptedModel(replies), HarnessPolicy(), out, run_id=f"r{i}"))


def test_runs_list_at_once_and_fill_in_their_drift_within_the_budget(tmp_path, monkeypatch):
    make(tmp_path / "batch", 3)
    view = Index(tmp_path)
    monkeypatch.setattr(index, "BUDGET_S", 0.0)  # no time to read any run whole
    glance = view.listing()
    assert [r["task_id"] for r in glance["runs"]] == ["t0", "t1", "t2"]
    assert all(r["pending"] and r["drift"] is None and r["status"] == "submitted" for r in glance["runs"])
    assert glance["batches"][0]["pending"] == 3
    monkeypatch.setattr(index, "BUDGET_S", 60.0)
    whole = view.listing()
    assert all(not r["pending"] and r["drift"] == 1 for r in whole["runs"])  # the repeated `ls`
    assert whole["batches"] == [
        {"path": "batch", "runs": 3, "running": 0, "cost_usd": None, "drift": 3, "pending": 0, "meta": {}}
    ]
    kept = dict(view.rows)
    view.listing()
    assert view.rows == kept  # nothing changed: nothing read again
