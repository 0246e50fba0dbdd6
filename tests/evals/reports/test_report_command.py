"""`harness report` on a run and on a batch, in HTML and in markdown."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import make_run, reply
from typer.testing import CliRunner

from cli.main import app
from core.policy import HarnessPolicy

runner = CliRunner()


def small_run(out: Path, task_id: str, steps: int) -> Path:
    script = [reply(f"step {i}", ("shell", {"command": f"echo {i}"}), prompt=500 + 100 * i) for i in range(1, steps)]
    script.append(reply("done", ("submit", {"answer": "ok"}), prompt=500 + 100 * steps))
    return make_run(out, script, HarnessPolicy(name="small"), task_id=task_id, prompt="Echo, then submit.")


def test_markdown_summary_for_a_terminal(rich_run):
    result = runner.invoke(app, ["report", str(rich_run), "--format", "md"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"# Run {rich_run.name}")
    assert "| Steps with no tool call | 1 | 6 |" in result.output
    assert "cost** unknown (no price for scripted:rich)" in result.output


def test_html_report_for_a_run_priced_as_another_model(rich_run, tmp_path):
    result = runner.invoke(
        app, ["report", str(rich_run), "--out", str(tmp_path / "r"), "--price-model", "openai:gpt-5"]
    )
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r" / "report.html").read_text()  # --out is the folder that receives report.html
    assert "Priced as openai:gpt-5" in html and 'id="chart-cost"' in html


def test_batch_report_links_every_run_report(rich_run, tmp_path):
    batch = tmp_path / "batch"
    shutil.copytree(rich_run, batch / rich_run.name)
    small = [small_run(batch, f"echo-{i}", 3 + i) for i in range(2)]
    result = runner.invoke(app, ["report", str(batch), "--price-model", "anthropic:claude-haiku-4-5"])
    assert result.exit_code == 0, result.output
    html = (batch / "report.html").read_text()
    for run_dir in [batch / rich_run.name, *small]:
        assert f'href="{run_dir.name}/report.html"' in html
        assert (run_dir / "report.html").is_file()
    md = runner.invoke(app, ["report", str(batch), "--format", "md"]).output
    assert "**runs** 3 · **succeeded** 100% (3 of 3)" in md


def test_a_folder_without_runs_is_an_error_that_says_so(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "holds no run directories" in " ".join(result.output.split())
