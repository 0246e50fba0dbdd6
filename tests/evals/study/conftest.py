"""A real study folder, made by `harness study` with a scripted model (a test double for the model:
the plumbing is under test, not the model) in the local sandbox: 2 policies × 2 tasks × 2 seeds,
swept over 1 and 4 runs in flight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

SCRIPT = """
- tool_calls: [{name: shell, arguments: {command: "python3 -m unittest -q 2>&1 | tail -3"}}]
- tool_calls: [{name: read_file, arguments: {path: "test_ledger.py", end_line: 20}}]
- tool_calls: [{name: shell, arguments: {command: "ls -la"}}]
- tool_calls: [{name: submit, arguments: {answer: "looked"}}]
"""


def study(tmp: Path, *args: str) -> tuple[int, str, Path | None]:
    result = CliRunner().invoke(app, ["study", *args, "--out", str(tmp)])
    folders = [p for p in tmp.iterdir() if p.is_dir()] if tmp.exists() else []
    return result.exit_code, result.output, folders[0] if folders else None


def scripted(tmp: Path, *args: str) -> tuple[int, str, Path | None]:
    """A study of the bundled coding tasks under `default` and `lean`, with the scripted model."""
    script = tmp / "script.yaml"
    script.write_text(SCRIPT)
    return study(
        tmp / "out",
        "--model",
        f"scripted:{script}",
        "--task",
        "ledger",
        "--task",
        "inventory",
        "--policy",
        "default",
        "--policy",
        "lean",
        *args,
    )


@pytest.fixture(scope="session")
def scripted_study(tmp_path_factory) -> Path:
    code, output, folder = scripted(
        tmp_path_factory.mktemp("study"), "--seeds", "0,1", "--concurrency", "1,4", "--sandbox", "local"
    )
    assert code == 0, output
    assert folder is not None
    return folder


@pytest.fixture(scope="session")
def scripted_study_json(scripted_study) -> dict:
    return json.loads((scripted_study / "study.json").read_text())
