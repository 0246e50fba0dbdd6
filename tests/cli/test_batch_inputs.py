"""Every batch command checks its model string and its policy before it creates anything: a mistake is one
paragraph and exit 2, and no folder is left behind (neither an empty batch folder nor a game that failed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "evals" / "tasks" / "tasks" / "memory-limit"  # a Harbor task folder

COMMANDS = {
    "chess": lambda out, model, policy: ["chess", "--model", model, "--policy", policy, "--out", str(out)],
    "swe": lambda out, model, policy: ["swe", "--model", model, "--policy", policy, "--out", str(out)],
    "tasks": lambda out, model, policy: [
        "tasks",
        "run",
        "--model",
        model,
        "--policy",
        policy,
        "--out",
        str(out),
        str(TASK),
    ],
    "study": lambda out, model, policy: [
        "study",
        "--model",
        model,
        "--task",
        "fizzbuzz",
        "--policy",
        policy,
        "--out",
        str(out),
    ],
    "run": lambda out, model, policy: ["run", "--task", "x", "--model", model, "--policy", policy, "--out", str(out)],
}
MISTAKES = {
    # what: (model, policy or None for a good one, the start of the message)
    "a model string of no known form": ("gpt4:turbo", None, "error: Unknown model 'gpt4:turbo'."),
    "a provider without its key": (
        "anthropic:claude-x",
        None,
        "error: The model 'anthropic:claude-x' needs an API key",
    ),
    "a scripted file that is not there": (
        "scripted:nope.yaml",
        None,
        "error: Cannot read scripted model file nope.yaml",
    ),
    "a policy that is a folder": ("scripted:SCRIPT", "FOLDER", "error: Policy FOLDER is a folder, not a policy"),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_batch_command_refuses_a_bad_model_or_policy_before_creating_anything(
    tmp_path, monkeypatch, command, mistake
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model, policy, said = MISTAKES[mistake]
    folder = tmp_path / "policies"
    folder.mkdir()
    model = model.replace("SCRIPT", str(ROOT / "examples" / "demo_script.yaml"))
    out = tmp_path / "out"
    args = COMMANDS[command](out, model, str(folder) if policy else "default")
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(said.replace("FOLDER", str(folder))), result.output
    assert "Traceback" not in result.output and "Unknown policy preset" not in result.output
    assert not out.exists()


def test_chess_names_a_scripted_player_given_without_its_prefix(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["chess", "--model", "random", "--out", str(out)])
    assert result.exit_code == 2 and "e.g. --model player:random." in result.output, result.output
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["chess", "--model", "player:random"],  # a game has no sandbox unless given one
        ["run", "--task", "x", "--model", "scripted:SCRIPT", "--sandbox", "none"],
    ],
)
def test_code_mode_without_a_sandbox_is_refused_before_creating_anything(tmp_path, args):
    out = tmp_path / "out"
    args = [a.replace("SCRIPT", str(ROOT / "examples" / "demo_script.yaml")) for a in args]
    policy = str(ROOT / "evals" / "loops" / "policies" / "code.toml")
    result = runner.invoke(app, [*args, "--policy", policy, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: The policy 'code' has dispatch.mode = 'code'"), result.output
    assert "--sandbox local or docker" in result.output and "Traceback" not in result.output
    assert not out.exists()
