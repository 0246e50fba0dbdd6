"""An imported run exported again, read by the third parties' own readers: Inspect's `read_eval_log` and harbor's
ATIF validator. The export carries when the source recorded each step, who recorded it, and, without grades,
an outcome that reads as unknown (no score), never as solved."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from cli.main import app
from evals.interop.exports.write import export
from tests.evals.interop.conftest import harbor_errors
from tests.evals.interop.test_published import published

runner = CliRunner()
inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai (the interop extra) reads the logs")

SOURCES = {
    "mini-swe-agent": "django__django-16255.traj.json",
    "swe-agent": "6e44b9__sweagenttestrepo-1c2844.traj",
    "atif": "django__django-13670.json",
    "claude-code": "tool_heavy.jsonl",
    "openhands": "basic.json",
}


def imported(fmt: str, out: Path, *args: str) -> Path:
    path = published(fmt) / SOURCES[fmt]
    if not path.is_file():
        pytest.skip(f"{path.name} is not laid here; tests/fixtures/imports/README.md says where it comes from")
    result = runner.invoke(app, ["import", str(path), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return Path(result.output.split("run directory: ")[1].splitlines()[0].strip())


@pytest.mark.parametrize("fmt", SOURCES)
def test_inspect_reads_the_export_of_an_imported_run_and_its_unknown_outcome_is_unscored(fmt, tmp_path):
    run_dir = imported(fmt, tmp_path / "runs")
    [path] = export(run_dir, "inspect", tmp_path / "log").written
    log = inspect_log.read_eval_log(str(path))
    started = read_run_info(run_dir).started_at or log.eval.created
    assert log.eval.created and log.eval.created.startswith(started[:19])
    assert path.name[:4].isdigit() and not path.name.startswith("+")  # `inspect view` lists it by its time
    [sample] = log.samples
    assert not sample.scores  # not graded: unknown, where it used to read as solved
    assert log.results is not None and all(s.unscored_samples == 1 for s in log.results.scores)


def test_grades_make_the_inspect_export_score_the_imported_run(tmp_path):
    grades = tmp_path / "results_summary.json"
    grades.write_text(json.dumps({"instances": [{"instance_id": "django__django-16255", "resolved": False}]}))
    run_dir = imported("mini-swe-agent", tmp_path / "runs", "--grades", str(grades))
    [path] = export(run_dir, "inspect", tmp_path / "log").written
    [sample] = inspect_log.read_eval_log(str(path)).samples
    assert sample.scores["resolved"].value == "I"


@pytest.mark.parametrize("fmt", SOURCES)
def test_harbor_accepts_the_atif_of_an_imported_run_which_names_its_agent_and_recorded_times(fmt, tmp_path):
    run_dir = imported(fmt, tmp_path / "runs")
    [path] = export(run_dir, "atif", tmp_path / "atif").written
    assert harbor_errors(path) == {str(path): []}
    trajectory, info = json.loads(path.read_text()), read_run_info(run_dir)
    assert trajectory["agent"]["name"] == info.imported["agent"] != "harness"
    assert trajectory["agent"].get("version", "") == info.imported["agent_version"]
    assert trajectory["extra"]["verdict"]["value"] is None
    stamps = [s.get("timestamp") for s in trajectory["steps"] if s["source"] == "agent"]
    if info.imported["timestamps"]:
        recorded = [s.replied.ts for s in fold(read_events(run_dir)).steps if s.replied is not None]
        assert stamps == [trajectory_time(ts) for ts in recorded]
    else:  # the source recorded no time: the import's own is not passed off as the run's
        assert stamps == [None] * len(stamps)


def trajectory_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def test_the_gemini_runs_steps_carry_the_times_the_provider_created_each_response(tmp_path):
    run_dir = imported("mini-swe-agent", tmp_path / "runs")
    doc = json.loads((published("mini-swe-agent") / SOURCES["mini-swe-agent"]).read_text())
    created = [m["extra"]["response"]["created"] for m in doc["messages"] if m["role"] == "assistant"]
    steps = fold(read_events(run_dir)).steps
    assert [s.replied.ts for s in steps if s.replied is not None] == created
    assert read_run_info(run_dir).started_at.startswith("2025-11-18T")


def test_a_report_of_an_ungraded_imported_batch_says_unknown_not_succeeded(tmp_path):
    folder = published("mini-swe-agent")
    result = runner.invoke(app, ["import", str(folder), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    md = runner.invoke(app, ["report", str(tmp_path / f"import-{folder.name}"), "--format", "md"]).output
    assert "**succeeded** unknown (4 runs not graded)" in md
    assert md.count("| unknown (submitted, not graded) |") == 4
    assert runner.invoke(app, ["report", str(tmp_path / f"import-{folder.name}")]).exit_code == 0
    page = (tmp_path / f"import-{folder.name}" / "report.html").read_text()
    assert '<div class="k">succeeded</div><div class="v">unknown</div>' in page
