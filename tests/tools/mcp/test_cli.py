"""`harness tools list` and `harness run` with MCP servers from the command line or a config file."""

from __future__ import annotations

import json
import shlex
import sys

from typer.testing import CliRunner

from cli.main import app

from .conftest import SERVERS, said

runner = CliRunner(env={"COLUMNS": "200"})  # wide enough that table rows stay on one line
BASIC = shlex.join([sys.executable, str(SERVERS / "basic.py")])


def rows(output: str) -> dict[str, list[str]]:
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in output.splitlines() if line.startswith("│")]
    return {row[0]: row[1:] for row in cells}


def test_tools_list_shows_built_in_and_mcp_tools_with_server_effect_and_summary(http_url, tmp_path):
    config = tmp_path / "servers.toml"
    config.write_text(
        f'[[mcp]]\nname = "mine"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(SERVERS / 'basic.py'))}]\ntrusted = true\n"
    )
    result = runner.invoke(app, ["tools", "list", "--config", str(config), "--mcp-url", f"web={http_url}"])
    assert result.exit_code == 0, result.output
    table = rows(result.output)
    assert table["shell"] == ["built-in", "write", "", "Run a bash command and see its output and exit code."]
    assert table["mine__echo"] == ["mine", "read", "", "Echo"]  # trusted, and it declares readOnlyHint
    assert table["mine__write_note"] == ["mine", "write", "", "Pretend to store a note."]
    assert table["web__echo"] == ["web", "write", "yes", "Echo"]  # untrusted: its read-only hint does not count
    assert table["web__weather"] == ["web", "write", "yes", "Structured output."]


def test_tools_list_prints_problems_and_startup_errors():
    hostile = runner.invoke(app, ["tools", "list", "--mcp", shlex.join([sys.executable, str(SERVERS / "hostile.py")])])
    assert (
        hostile.exit_code == 0 and "warning: MCP server hostile: a tool would be named 'hostile__a_b'" in hostile.output
    )
    assert "warning: MCP server hostile: tool 'too_big' is left out" in hostile.output
    broken = runner.invoke(app, ["tools", "list", "--mcp", "/no/such/server --flag"])
    assert broken.exit_code == 2 and "Traceback" not in broken.output
    assert "error: MCP server server (/no/such/server --flag) did not start" in " ".join(broken.output.split())


def test_run_accepts_the_same_options(tmp_path):
    config = tmp_path / "servers.yaml"
    config.write_text(
        f"mcp:\n  - name: notes\n    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(SERVERS / 'basic.py'))}]\n    approve: never\n"
    )
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: notes__write_note, arguments: {text: hi}}]\n"
        "- tool_calls: [{name: echo__echo, arguments: {text: hi}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    result = runner.invoke(
        app,
        [
            "run",
            "--task",
            "Take a note.",
            "--model",
            f"scripted:{script}",
            "--out",
            str(tmp_path / "runs"),
            "--config",
            str(config),
            "--mcp",
            f"echo={BASIC}",
        ],
    )
    assert result.exit_code == 0, result.output
    [run_dir] = list((tmp_path / "runs").iterdir())
    log = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    observed = {e["observation"]["tool"]: e["observation"] for e in log if e["type"] == "tool_observed"}
    assert said(observed["notes__write_note"]["text"], "notes") == "stored note: hi"
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "awaiting_approval"  # echo is untrusted
    assert [s["name"] for s in json.loads((run_dir / "run.json").read_text())["policy"]["mcp"]] == ["notes", "echo"]
