"""A run directory with run.json but no events.jsonl (its process died before the first event, or a copy left
the journal out): replay, fork and approve say so and how to go on, exit 2, and write nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.agent.journal.damage import finished_run

runner = CliRunner()


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("runs"))


COMMANDS = {
    "replay": lambda run_dir, out: ["replay", str(run_dir), "--out", str(out)],
    "fork": lambda run_dir, out: ["fork", str(run_dir), "--at-step", "1", "--out", str(out)],
    "approve": lambda run_dir, out: ["approve", str(run_dir), "--call", "call_1_0", "--yes"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_run_without_its_journal_is_refused(command, finished, tmp_path):
    run_dir = Path(shutil.copytree(finished, tmp_path / "runs" / finished.name))
    (run_dir / "events.jsonl").unlink()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = runner.invoke(app, COMMANDS[command](run_dir, tmp_path / "out"))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    said = " ".join(result.stderr.split())
    assert f"{run_dir} is not a whole run directory: it has run.json but no events.jsonl" in said
    assert f"`harness resume {run_dir}` starts it from the beginning" in said
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
