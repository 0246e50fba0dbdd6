"""Success as reports and A/B tables read it: a grader's verdict first, else submission."""

from __future__ import annotations

import json
import shutil

from agent.journal.summary import Summary
from agent.models.pricing import load_prices
from evals.reports.load import load_run
from evals.reports.outcome import outcome_label, success


def summary(stop: str = "submitted", **outcome) -> Summary:
    # only the stop reason and the outcome matter here; the summary's other fields are left unset
    return Summary.model_construct(stop_reason=stop, outcome=outcome)


def test_verdicts_in_the_outcome_win_over_the_stop_reason():
    assert success(summary("submitted")) and outcome_label(summary("submitted")) == "submitted"
    assert not success(summary("step_budget"))
    assert success(summary("goal_verified", goal_verified=True))
    assert (
        not success(summary("submitted", resolved=False)) and outcome_label(summary(resolved=False)) == "not resolved"
    )
    assert success(summary("game_over", player_result="win", result="1-0"))
    assert not success(summary("game_over", player_result="draw", result="1/2-1/2"))
    assert outcome_label(summary("game_over", player_result="loss")) == "loss"


def test_a_grade_file_beside_the_run_decides(rich_run, tmp_path):
    graded = shutil.copytree(rich_run, tmp_path / rich_run.name)
    assert success(load_run(graded, load_prices()).summary)  # it submitted
    (graded / "grade.json").write_text(json.dumps({"rich": {"resolved": False, "patch_exists": True}}))
    run = load_run(graded, load_prices())
    assert not success(run.summary) and outcome_label(run.summary) == "not resolved"
