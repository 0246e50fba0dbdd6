"""`harness tasks run`: a Harbor dataset run under a cost budget and resumed, and what --base-image says."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app
from tests.evals.tasks.conftest import TASKS

BASE = ["--base-image", "python:3.13-slim-bookworm=harness-base:bookworm-1"]


def harness(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line(output: str) -> str:
    return " ".join(output.split())


def test_a_dataset_past_its_budget_says_so_and_resume_runs_the_rest(docker_ready, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('[reference."null"]\ninput = 1.0\noutput = 1.0\n')
    common = ["tasks", "run", str(TASKS), "--model", "null", "--prices", str(prices), *BASE]
    result = harness(*common, "--max-cost-usd", "0.000001", "--out", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "runs").iterdir()
    said = one_line(result.output)
    assert "3 tasks were not started" in said and f"--resume {folder}" in said
    assert "FROM python:3.13-slim-bookworm is built on the local image harness-base:bookworm-1" in said
    assert len(json.loads((folder / "report.json").read_text())["incomplete_ids"]) == 3

    result = harness(*common, "--max-cost-usd", "1", "--resume", str(folder), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["incomplete_ids"] == [] and shown["resolved_ids"] == [] and shown["total_instances"] == 4
    statuses = [i["status"] for i in json.loads((folder / "executor.json").read_text())["items"].values()]
    assert sorted(statuses) == ["done", "done", "done", "reused"]


def test_an_unpullable_from_is_named_with_the_flag_that_fixes_it(docker_ready, tmp_path):
    result = harness("tasks", "run", str(TASKS / "multi-file"), "--model", "oracle", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    said = one_line(result.output)
    assert "python:3.13-slim-bookworm" in said and "--base-image" in said
    (folder,) = tmp_path.iterdir()
    assert json.loads((folder / "report.json").read_text())["error_ids"] == ["multi-file"]


def test_a_folder_that_is_no_task_is_refused(tmp_path):
    result = harness("tasks", "run", str(tmp_path), "--model", "null")
    assert result.exit_code == 2 and "neither a Harbor task folder" in one_line(result.output)


def test_report_ab_and_passk_read_tasks_batches_as_swe_ones(docker_ready, tmp_path):
    folders = {}
    for model in ("oracle", "null"):
        result = harness("tasks", "run", str(TASKS), "--model", model, *BASE, "--out", str(tmp_path), "--json")
        assert result.exit_code == 0, result.output
        folders[model] = json.loads(result.stdout)["batch_folder"]
    result = harness("ab", folders["oracle"], folders["null"], "--out", str(tmp_path / "ab"))
    assert result.exit_code == 0, result.output
    (ab,) = (tmp_path / "ab").glob("*/ab.json")
    compared = json.loads(ab.read_text())
    assert (compared["pairs"], compared["success_a"][0], compared["success_b"][0]) == (4, 0.75, 0.0)
    result = harness("swe", "passk", folders["oracle"], folders["null"], "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["estimates"][0]["value"] == 0.375  # 3 of 8 runs resolved, k = 1
    result = harness("report", folders["oracle"], "--format", "md")
    assert result.exit_code == 0, result.output
