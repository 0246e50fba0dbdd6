"""Export, then import: the run that comes back folds into the same steps as the run that went out (each
reply's text, reasoning, calls, results and usage), through ATIF and through an Inspect log alike."""

from __future__ import annotations

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
            [(c.name, c.arguments) for c in s.calls],
            [(o.status, o.text) for o in s.observations],
            s.usage,
        )
        for s in fold(read_events(run_dir)).steps
        if s.reply is not None
    ]


def invoke(*args) -> str:
    result = runner.invoke(app, [*map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("fmt", ["atif", "inspect"])
@pytest.mark.parametrize("which", ["full_run", "compacted_run"])
def test_an_exported_run_imports_back_to_the_same_step_fold(fmt, which, request, tmp_path):
    run_dir = request.getfixturevalue(which)
    invoke("export", run_dir, "--format", fmt, "--out", tmp_path / "exported")
    [exported] = (tmp_path / "exported").iterdir()
    back = invoke("import", exported, "--out", tmp_path / "imported").split("run directory: ")[1].strip()
    assert steps(back) == steps(run_dir)
