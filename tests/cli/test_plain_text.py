"""Text a model, a tool or a user wrote is printed as written: rich reads no markup (`[bold]`) and no emoji
code (`:x:`, which turned `root:x:0:0` into `root❌0:0`) in it. Each test runs `harness` as a real process."""

from __future__ import annotations

from tests.cli.test_piped import harness

DATA = "root:x:0:0 [bold]x[/bold] :smile:"


def test_a_failing_tools_output_and_the_answer_print_verbatim(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(
        f"- tool_calls: [{{name: shell, arguments: {{command: \"echo '{DATA}'; exit 3\"}}}}]\n"
        f'- tool_calls: [{{name: submit, arguments: {{answer: "{DATA}"}}}}]\n'
    )
    done = harness("run", "--task", f"Print {DATA}", "--model", f"scripted:{script}", "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"  step 1: shell error {DATA}" in lines  # the progress line of the failing call
    [outcome] = [line for line in lines if "outcome" in line]
    assert f"answer={DATA}" in outcome  # the summary table
    assert "❌" not in done.stdout and "😄" not in done.stdout


def test_an_error_message_prints_the_name_it_was_given_verbatim(tmp_path):
    done = harness("run", "--task", "x", "--model", "scripted:none.yaml", "--policy", DATA, "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.startswith(f"error: Unknown policy preset '{DATA}'.")
