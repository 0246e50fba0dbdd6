"""SWE inputs that hold nothing to do, or the wrong things, are refused before a folder is made: a predictions
file with no prediction or with entries that are not predictions, a records file with no record; and --resume
refuses a folder that is no earlier run of the batch, leaving it as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def refused(tmp_path: Path, *args: str) -> str:
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    assert not (tmp_path / "runs").exists()
    return " ".join(result.stderr.split())


@pytest.mark.parametrize(
    "content, says",
    [
        ("", "it holds no prediction"),
        ("[]", "it holds no prediction"),
        ("[1, 2]", "its entry 1 is not an object with an instance_id"),
        ('{"model_patch": "diff"}\n', "its entry 1 is not an object with an instance_id"),
    ],
    ids=["empty", "empty list", "numbers", "no instance_id"],
)
def test_predictions_with_nothing_to_grade_are_refused(tmp_path, content, says):
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(content)
    said = refused(tmp_path, "swe-grade", str(predictions))
    assert said.startswith(f"error: Predictions file {predictions} cannot be graded: {says}.")


def test_predictions_cut_short_name_the_file(tmp_path):
    predictions = tmp_path / "preds.json"
    predictions.write_text('[{"instance_id": ')
    said = refused(tmp_path, "swe-grade", str(predictions))
    assert said.startswith(f"error: Predictions file {predictions} is not valid JSON or JSONL:")


@pytest.mark.parametrize(
    "command", [["swe", "--model", "null", "--suite"], ["swe", "validate"]], ids=["swe", "validate"]
)
def test_a_records_file_with_no_record_is_refused(tmp_path, command):
    records = tmp_path / "records.jsonl"
    records.write_text("[]\n")
    said = refused(tmp_path, *command, str(records))
    assert f"Task file {records} holds no SWE-bench record" in said


def test_resume_refuses_a_folder_that_is_no_batch_and_leaves_it_alone(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.md").write_text("mine\n")
    result = runner.invoke(app, ["swe", "--model", "null", "--resume", str(folder)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    said = " ".join(result.stderr.split())
    assert f"{folder} is not a batch folder of these instances: it has no batch.json" in said
    assert "leave out --resume" in said
    assert [p.name for p in folder.iterdir()] == ["notes.md"]
