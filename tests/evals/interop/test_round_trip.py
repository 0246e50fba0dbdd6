"""Export, then import: the run that comes back folds into the same steps as the run that went out (each
reply's text, reasoning, calls, results, usage and cost), and stops for the same reason, through ATIF and
through an Inspect log alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events
from cli.main import app

runner = CliRunner()


def steps(run_dir):
    return [
        (
            s.reply.message.text,
            s.reply.message.reasoning.text if s.reply.message.reasoning else None,
            [(c.id, c.name, c.arguments) for c in s.calls],
            [(o.status, o.error_kind, o.exit_code, o.text) for o in s.observations],
            s.usage,
            s.replied.cost_usd,
        )
        for s in fold(read_events(run_dir)).steps
        if s.replied is not None
    ]


def ending(run_dir) -> tuple[str, str]:
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return summary["stop_reason"], summary["message"]


def total_cost(run_dir) -> float:
    return json.loads((Path(run_dir) / "summary.json").read_text())["cost_usd"]


def invoke(*args) -> str:
    result = runner.invoke(app, [*map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("fmt", ["atif", "inspect"])
@pytest.mark.parametrize("which", ["full_run", "compacted_run"])
def test_an_exported_run_imports_back_to_the_same_steps_costs_and_stop(fmt, which, request, tmp_path):
    run_dir = request.getfixturevalue(which)
    invoke("export", run_dir, "--format", fmt, "--out", tmp_path / "exported")
    [exported] = (tmp_path / "exported").iterdir()
    back = invoke("import", exported, "--out", tmp_path / "imported").split("run directory: ")[1].strip()
    assert steps(back) == steps(run_dir)
    assert any(cost is not None for *_, cost in steps(back)) or which == "compacted_run"
    assert ending(back) == ending(run_dir)
    if which == "full_run":  # a compacting run's summariser calls are its own cost, not a reply's: not carried
        assert total_cost(back) == pytest.approx(total_cost(run_dir)) and total_cost(run_dir) > 0


@pytest.mark.parametrize("fmt", ["atif", "inspect"])
def test_a_batch_exported_imports_back_run_for_run(fmt, batch, tmp_path):
    invoke("export", batch, "--format", fmt, "--out", tmp_path / "exported")
    invoke("import", tmp_path / "exported", "--out", tmp_path / "imported")
    [folder] = (tmp_path / "imported").iterdir()
    back = {
        json.loads((d / "run.json").read_text())["task"]["id"].rpartition("/")[2]: d
        for d in folder.iterdir()
        if (d / "run.json").is_file()
    }
    for run_dir in sorted(d for d in batch.iterdir() if (d / "run.json").is_file()):
        twin = back[run_dir.name]
        assert steps(twin) == steps(run_dir) and ending(twin) == ending(run_dir)
