"""`harness run` refuses a mistaken option before the run directory exists: a folder given as the task, a
--memory that is a file or has an unknown mode, resources or a prompt named with no MCP server to ask, an
--mcp-url that is no URL. Exit 2, one paragraph on stderr, and no run directory left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "demo_script.yaml"
MODEL = f"scripted:{SCRIPT}"


def refused(tmp_path: Path, *args: str) -> str:
    """The message, one line, after asserting exit 2, nothing on stdout and no run directory."""
    result = runner.invoke(app, ["run", "--model", MODEL, "--out", str(tmp_path / "runs"), *args])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists()
    return " ".join(result.stderr.split())


def test_a_folder_given_as_the_task_is_refused(tmp_path):
    folder = tmp_path / "my-task"
    folder.mkdir()
    said = refused(tmp_path, "--task", str(folder))
    assert f"Task {folder} is a folder" in said and "harness tasks run" in said


def test_a_memory_folder_that_is_a_file_is_refused_before_the_run(tmp_path):
    kept = tmp_path / "notes.txt"
    kept.write_text("mine\n")
    said = refused(tmp_path, "--task", "x", "--memory", str(kept))
    assert f"{kept} is a file, not a folder" in said
    assert kept.read_text() == "mine\n"


def test_a_memory_mode_other_than_ro_or_rw_is_refused(tmp_path):
    said = refused(tmp_path, "--task", "x", "--memory", f"{tmp_path / 'mem'}:readonly")
    assert "the mode after the colon is ro or rw, not 'readonly'" in said
    assert not (tmp_path / "mem:readonly").exists()


@pytest.mark.parametrize(
    "option, says",
    [
        (["--task", "x", "--mcp-resource", "docs:file:///a.md"], "Resources are named (docs:file:///a.md)"),
        (["--mcp-prompt", "docs:review"], "--mcp-prompt docs:review: the run has no MCP servers"),
    ],
)
def test_mcp_context_with_no_server_is_refused_before_the_run(tmp_path, option, says):
    said = refused(tmp_path, *option)
    assert says in said and "--mcp" in said


def test_an_mcp_url_that_is_no_url_says_so_in_one_sentence(tmp_path):
    said = refused(tmp_path, "--task", "x", "--mcp-url", "localhost:8000")
    assert said == (
        "error: --mcp-url 'localhost:8000' is invalid: MCP server 'http': url must start with http:// or https://, "
        "not 'localhost:8000'."
    )
