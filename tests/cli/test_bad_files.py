"""A file the user hands in that is not UTF-8 (a task, a scripted model, a policy, a price table, SWE records,
specs, predictions, an MCP config, localization rankings, a chess calibration table, a Harbor task, a run's run.json) ends the command with exit 2 and one line naming the file, the byte and
its offset, never a UnicodeDecodeError traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "demo_script.yaml"
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "trajectories" / "click-bool-yes"
HARBOR_TASK = ROOT / "tests" / "evals" / "tasks" / "tasks" / "network-off"
LATIN_1 = "caf\xe9 au lait".encode("latin-1")  # é as one byte, 0xe9: not UTF-8


def bad(folder: Path, name: str, head: bytes) -> Path:
    path = folder / name
    path.write_bytes(head + LATIN_1 + b"\n")
    return path


CASES = {
    # what: (file name, bytes before the bad one, the command given the file's path)
    "markdown task": ("t.md", b"Write ", lambda f: ["run", "--task", str(f), "--model", f"scripted:{SCRIPT}"]),
    "YAML task": ("t.yaml", b"prompt: ", lambda f: ["run", "--task", str(f), "--model", f"scripted:{SCRIPT}"]),
    "scripted model": ("m.yaml", b"replies:\n  - text: ", lambda f: ["run", "--task", "x", "--model", f"scripted:{f}"]),
    "policy": (
        "p.toml",
        b'extends = "default"\n# ',
        lambda f: ["run", "--task", "x", "--model", f"scripted:{SCRIPT}", "--policy", str(f)],
    ),
    "price table": ("prices.toml", b"# ", lambda f: ["report", str(FIXTURE_RUN), "--format", "md", "--prices", str(f)]),
    "SWE records": ("r.jsonl", b'{"instance_id": "', lambda f: ["swe", "validate", str(f)]),
    "SWE specs": ("specs.yaml", b"# ", lambda f: ["swe", "validate", "builtin", "--specs", str(f)]),
    "SWE predictions": ("preds.jsonl", b'{"model_patch": "', lambda f: ["swe-grade", str(f)]),
    "MCP config": ("mcp.toml", b"# ", lambda f: ["tools", "list", "--config", str(f)]),
    "rankings": (
        "rankings.jsonl",
        b'{"instance_id": "',
        lambda f: ["report", str(FIXTURE_RUN), "--format", "md", "--rankings", str(f)],
    ),
    "calibration": (
        "ladder.json",
        b'{"stockfish": "',
        lambda f: ["chess", "--model", "player:random", "--rate", "--calibration", str(f)],
    ),
}
WHAT = {
    "markdown task": "Task file",
    "YAML task": "Task file",
    "scripted model": "Scripted model file",
    "policy": "Policy file",
    "price table": "Price table",
    "SWE records": "Task file",
    "SWE specs": "Spec file",
    "SWE predictions": "Predictions file",
    "MCP config": "MCP config file",
    "rankings": "The rankings file",
    "calibration": "Calibration table",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_that_is_not_utf8_is_a_one_line_error_naming_the_byte(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run that started anyway would land in ./runs
    name, head, command = CASES[case]
    path = bad(tmp_path, name, head)
    result = runner.invoke(app, command(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "UnicodeDecodeError" not in result.output
    offset, line = len(head) + 3, head.count(b"\n") + 1
    said = " ".join(result.output.split())
    assert said == (
        f"error: {WHAT[case]} {path} is not UTF-8: byte 0xe9 at offset {offset} (line {line}); save it as UTF-8."
    )
    assert not (tmp_path / "runs").exists()  # nothing started


def test_a_run_record_that_is_not_utf8_is_named_by_report(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURE_RUN, tmp_path / "run"))
    (run_dir / "run.json").write_bytes(b'{"run_id": "' + LATIN_1 + b'"}')
    result = runner.invoke(app, ["report", str(run_dir), "--format", "md"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"Run record {run_dir}/run.json is not UTF-8: byte 0xe9 at offset 15" in " ".join(result.output.split())


def test_a_harbor_task_that_is_not_utf8_is_named_by_tasks_run(tmp_path):
    task = Path(shutil.copytree(HARBOR_TASK, tmp_path / "task"))
    bad(task, "instruction.md", b"List ")
    result = runner.invoke(app, ["tasks", "run", str(task), "--model", "null", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    said = " ".join(result.stderr.split())
    assert (
        said
        == f"error: Task instruction {task / 'instruction.md'} is not UTF-8: byte 0xe9 at offset 8 (line 1); save it as UTF-8."
    )
    assert not (tmp_path / "runs").exists()
