"""The CLI as a user meets it: help, the demo, and one-paragraph errors instead of tracebacks."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import EXAMPLES, app

runner = CliRunner()


def test_help_lists_every_command():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "policies", "demo"):
        assert command in result.output


def test_the_scripted_example_writes_a_complete_run_directory(tmp_path):
    result = runner.invoke(
        app,
        [
            "run",
            "--task",
            str(EXAMPLES / "demo_task.yaml"),
            "--model",
            f"scripted:{EXAMPLES / 'demo_script.yaml'}",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    [run_dir] = list(tmp_path.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "submitted" and summary["errors"] == {"nonzero_exit": 1}
    assert "submitted" in result.output and str(run_dir) in result.output.replace("\n", "")


def test_policies_lists_and_shows_presets():
    listing = runner.invoke(app, ["policies"])
    assert "first_write_wins" in listing.output and "lean" in listing.output
    shown = runner.invoke(app, ["policies", "lean", "--json"])
    assert {k["name"]: k["value"] for k in json.loads(shown.output)}["context[0].kind"] == "strip_reasoning"


def run(tmp_path, *args):
    return runner.invoke(app, ["run", "--out", str(tmp_path), *args])


def test_errors_are_one_paragraph_not_tracebacks(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: shell, arguments: {command: 'true'}}]\n")
    cases = [
        (
            ["--task", "x", "--model", "scripted:" + str(script), "--policy", "fastest"],
            "Unknown policy preset 'fastest'",
        ),
        (["--task", "missing.yaml", "--model", "scripted:" + str(script)], "Cannot read task file missing.yaml"),
        (["--task", "x", "--model", "scripted:/nope.yaml"], "Cannot read scripted model file /nope.yaml"),
        (["--task", "x", "--model", "gpt:4"], "Unknown model 'gpt:4'"),
        (["--task", "x", "--model", "scripted:" + str(script), "--sandbox", "vm"], "Unknown sandbox 'vm'"),
    ]
    for args, message in cases:
        result = run(tmp_path, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def test_a_script_that_runs_out_ends_the_run_with_a_clear_message(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: shell, arguments: {command: 'echo hi'}}]\n")
    result = run(tmp_path / "runs", "--task", "x", "--model", f"scripted:{script}")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "model_error" in result.output and "has 1 replies" in " ".join(result.output.split())


def test_a_broken_scripted_file_names_the_reply_and_field(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{nam: shell}]\n")
    result = run(tmp_path, "--task", "x", "--model", f"scripted:{script}")
    assert result.exit_code == 2 and "Reply 1" in result.output and "tool_calls.0" in result.output


def test_serve_names_the_weight_formats_it_knows():
    result = runner.invoke(app, ["serve", "--weights", "int8"])
    assert result.exit_code == 2
    assert "--weights must be float32 or int4, got 'int8'" in " ".join(result.output.split())
    result = runner.invoke(app, ["serve", "--device", "tpu"])
    assert result.exit_code == 2
    assert "the device must be cpu, cuda or cuda:N, got 'tpu'" in " ".join(result.output.split())


def test_run_prices_each_call_from_a_table_and_stops_on_a_cost_budget(tmp_path):
    script = EXAMPLES / "demo_script.yaml"
    prices = tmp_path / "prices.toml"
    prices.write_text(f'[scripted."{script}"]\ninput = 100000.0\noutput = 100000.0\n')
    policy = tmp_path / "budget.toml"
    policy.write_text("[stop]\nmax_cost_usd = 0.01\n")
    args = ["run", "--task", str(EXAMPLES / "demo_task.yaml"), "--model", f"scripted:{script}", "--policy", str(policy)]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "runs"), "--prices", str(prices)])
    assert result.exit_code == 0, result.output
    [run_dir] = list((tmp_path / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_cost" and summary["steps"] == 1 and summary["unpriced_calls"] == 0
    assert "max_cost" in result.output and "$" in result.output
    unpriced = runner.invoke(app, [*args, "--out", str(tmp_path / "other")])
    assert unpriced.exit_code != 0 and "has no price for model" in unpriced.output
    assert "Traceback" not in unpriced.output and not (tmp_path / "other").exists()
