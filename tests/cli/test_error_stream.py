"""A command that refuses its input says why on stderr and leaves stdout empty, as the options' usage errors
do: a script that reads a table, JSON or a path from stdout never takes the message for its result."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "demo_script.yaml"
HARBOR_TASK = ROOT / "tests" / "evals" / "tasks" / "tasks" / "network-off"

COMMANDS = {
    "run": lambda tmp: ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--policy", "no_such_preset"],
    "policies": lambda tmp: ["policies", "no_such_preset"],
    "report": lambda tmp: ["report", str(tmp / "missing"), "--format", "md"],
    "fork": lambda tmp: ["fork", str(tmp / "missing"), "--at-step", "1"],
    "import": lambda tmp: ["import", str(tmp / "missing.json")],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_refusal_is_on_stderr_and_stdout_is_empty(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, COMMANDS[command](tmp_path))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "command, args",
    [
        ("report", ["b", "--format", "md"]),
        ("ab", ["b", "b"]),
        ("rerender", ["b", "--policy", "lean"]),
        ("rerender", ["RUN", "--policy", "lean"]),
    ],
    ids=["report", "ab", "rerender batch", "rerender run"],
)
def test_a_price_model_the_table_lacks_is_refused_once_before_any_run_is_read(command, args, tmp_path, monkeypatch):
    for task in ("x", "y"):
        made = runner.invoke(
            app, ["run", "--task", task, "--model", f"scripted:{SCRIPT}", "--out", str(tmp_path / "b")]
        )
        assert made.exit_code == 0, made.output
    monkeypatch.chdir(tmp_path)
    run = str(sorted((tmp_path / "b").iterdir())[0])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = runner.invoke(
        app, [command, *[run if a == "RUN" else a for a in args], "--price-model", "acme:no-such-model"]
    )
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith("error: ")
    assert result.stderr.count("has no 'acme:no-such-model'") == 1 and "left out" not in result.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


BATCHES = {
    "swe": ["swe", "--model", "null", "--only", "acme__textkit-7"],
    "tasks run": ["tasks", "run", str(HARBOR_TASK), "--model", "null"],
    "chess": ["chess", "--model", "player:random", "--games", "1"],
}


@pytest.mark.parametrize("command", ["swe", "tasks run"])
def test_a_resume_folder_of_something_else_is_refused_before_the_batch_folder_is_named(command, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.md").write_text("mine\n")
    result = runner.invoke(app, [*BATCHES[command], "--resume", str(folder)])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert f"{folder} is not a batch folder of these instances" in " ".join(result.stderr.split())
    assert [p.name for p in folder.iterdir()] == ["notes.md"]


@pytest.mark.parametrize("command", ["swe", "tasks run"])
def test_a_batch_folder_that_cannot_be_made_is_refused_before_it_is_named(command, tmp_path):
    (tmp_path / "file").write_text("mine\n")
    result = runner.invoke(app, [*BATCHES[command], "--out", str(tmp_path / "file")])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and "Traceback" not in result.stderr
    said = " ".join(result.stderr.split())
    assert (
        said.startswith(f"error: Cannot create the batch folder {tmp_path / 'file'}/") and "pick another --out" in said
    )
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


@pytest.mark.parametrize("command", list(BATCHES))
def test_a_price_table_that_cannot_be_read_is_refused_before_the_batch_starts(command, tmp_path):
    table = tmp_path / "prices.toml"
    table.write_text("not a table\n")
    result = runner.invoke(app, [*BATCHES[command], "--prices", str(table), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith(f"error: Price table {table} is not valid TOML")
    assert list(tmp_path.iterdir()) == [table]  # no batch folder, no run


def test_a_batch_whose_every_run_is_left_out_names_them_on_stderr_and_leaves_stdout_empty(tmp_path):
    for task in ("x", "y"):
        made = runner.invoke(
            app, ["run", "--task", task, "--model", f"scripted:{SCRIPT}", "--out", str(tmp_path / "b")]
        )
        assert made.exit_code == 0, made.output
    for run in (tmp_path / "b").iterdir():  # an event lost in the middle of each journal
        lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
        (run / "events.jsonl").write_text("".join(lines[:3] + lines[4:]))
    result = runner.invoke(app, ["rerender", str(tmp_path / "b"), "--policy", "lean"])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("left out:") == 2
    assert "error: No run of" in result.stderr and "Traceback" not in result.stderr
