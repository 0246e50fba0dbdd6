"""The commands that read a run folder (report, replay, rerender, ab) on a torn or damaged journal, a stale
summary.json and a read-only folder: each says what it found (on stderr and in the report), shows figures
derived from the readable events, never a stale summary, and leaves the journal's bytes as they were."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.agent.journal.damage import cut, finished_run, flip, lines, tear

runner = CliRunner()


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def run_dir(finished, tmp_path) -> Path:
    return Path(shutil.copytree(finished, tmp_path / "batch" / finished.name))


def invoke(*args: str, journal: Path | None = None):
    """The command's result, asserting it left the journal's bytes as they were and printed no traceback."""
    before = (journal / "events.jsonl").read_bytes() if journal else None
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    if journal is not None:
        assert (journal / "events.jsonl").read_bytes() == before
    return result


def one_line(text: str) -> str:
    return " ".join(text.split())


def torn_at(run_dir: Path) -> int:
    line = len(lines(run_dir)) - 2  # the process died writing the last tool observation
    tear(run_dir, line)
    return line


def test_report_on_a_torn_journal_warns_and_shows_the_readable_events_not_the_summary(run_dir):
    line = torn_at(run_dir)
    result = invoke("report", str(run_dir), "--format", "md", journal=run_dir)
    assert result.exit_code == 0
    said = f"events.jsonl has a torn tail at line {line}: it was cut short mid-write"
    assert said in one_line(result.stderr) and one_line(result.stderr).startswith("warning:")
    assert f"> **warning:** {said}" in result.stdout
    assert "summary.json is not used: the journal is not whole" in result.stdout
    assert "(stop: unfinished)" in result.stdout and "submitted" not in result.stdout


def test_report_on_a_flipped_byte_names_the_line_in_the_html(run_dir):
    flip(run_dir, 5)
    result = invoke("report", str(run_dir), journal=run_dir)
    assert result.exit_code == 0, result.output
    said = "events.jsonl line 5 is damaged: its checksum does not match its content"
    assert said in one_line(result.stderr)
    html = (run_dir / "report.html").read_text()
    assert 'id="journal-check"' in html and said in html
    assert "summary.json is not used" in html


def test_report_on_a_stale_summary_says_so_and_derives_the_figures(run_dir):
    cut(run_dir, len(lines(run_dir)) - 3)
    result = invoke("report", str(run_dir), "--format", "md", journal=run_dir)
    assert result.exit_code == 0
    assert "summary.json does not match the journal (it says stop submitted, the journal unfinished)" in result.stdout
    assert "(stop: unfinished)" in result.stdout


def test_a_batch_report_names_the_damaged_run(run_dir, finished):
    shutil.copytree(finished, run_dir.parent / "whole")
    flip(run_dir, 5)
    result = invoke("report", str(run_dir.parent), "--format", "md", journal=run_dir)
    assert result.exit_code == 0
    assert f"> **warning:** {finished.name}: events.jsonl line 5 is damaged" in result.stdout
    html = invoke("report", str(run_dir.parent)).exit_code == 0 and (run_dir.parent / "report.html").read_text()
    assert 'id="journal-check"' in html and "line 5 is damaged" in html


def test_replay_of_a_torn_journal_names_the_torn_line_and_stops(run_dir, tmp_path):
    line = torn_at(run_dir)
    result = invoke("replay", str(run_dir), "--out", str(tmp_path / "replays"), journal=run_dir)
    assert result.exit_code == 2
    assert f"events.jsonl has a torn tail at line {line}: it was cut short mid-write" in one_line(result.output)
    assert f"harness resume {run_dir}" in one_line(result.output)
    assert "divergence" not in result.output and not (tmp_path / "replays").exists()


def test_replay_of_a_flipped_byte_names_the_damaged_line_and_stops(run_dir):
    flip(run_dir, 5)
    result = invoke("replay", str(run_dir), journal=run_dir)
    assert result.exit_code == 2
    assert "events.jsonl line 5 is damaged: its checksum does not match its content" in one_line(result.output)
    assert "--repair" in result.output and "divergence" not in result.output


def test_rerender_of_a_torn_journal_warns_first(run_dir):
    line = torn_at(run_dir)
    result = invoke("rerender", str(run_dir), "--policy", "default", journal=run_dir)
    assert result.exit_code == 0, result.output
    assert f"torn tail at line {line}" in one_line(result.stderr)


def test_ab_warns_of_a_damaged_run_on_stderr_and_in_the_comparison(run_dir, finished, tmp_path):
    a = tmp_path / "a"
    shutil.copytree(finished, a / finished.name)
    flip(run_dir, 5)
    result = invoke("ab", str(a), str(run_dir.parent), "--out", str(tmp_path / "ab"), journal=run_dir)
    assert result.exit_code == 0, result.output
    said = f"{finished.name}: events.jsonl line 5 is damaged: its checksum does not match its content"
    assert said in one_line(result.stderr)
    assert said in one_line((tmp_path / "ab" / "ab-a-vs-batch" / "ab.html").read_text())


def written(result) -> Path:
    return Path(re.search(r"wrote (\S+)", result.stdout).group(1))


def test_report_of_a_read_only_run_folder_is_written_elsewhere_and_says_where(run_dir, immutable):
    immutable(run_dir)
    before = sorted(p.name for p in run_dir.iterdir())
    result = invoke("report", str(run_dir), journal=run_dir)
    assert result.exit_code == 0, result.output
    assert f"note: {run_dir} cannot be written (read-only?), so the report goes to" in one_line(result.stderr)
    report = written(result)
    assert report.is_file() and not report.is_relative_to(run_dir) and "submitted" in report.read_text()
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_report_of_a_read_only_batch_goes_to_out_with_each_run_report(run_dir, immutable, tmp_path):
    immutable(run_dir, run_dir.parent)
    result = invoke("report", str(run_dir.parent), "--out", str(tmp_path / "out"), journal=run_dir)
    assert result.exit_code == 0, result.output
    batch = (tmp_path / "out" / "report.html").read_text()
    assert f'href="{run_dir.name}/report.html"' in batch
    assert (tmp_path / "out" / run_dir.name / "report.html").is_file()


def test_the_commands_that_only_read_work_in_a_read_only_run_folder(run_dir, immutable, tmp_path):
    immutable(run_dir, run_dir.parent, tmp_path)  # the batch and the folder that holds it
    for args in (
        ["report", str(run_dir), "--format", "md"],
        ["rerender", str(run_dir), "--policy", "default"],
        ["replay", str(run_dir)],
        ["ab", str(run_dir.parent), str(run_dir.parent)],
    ):
        result = invoke(*args, journal=run_dir)
        assert result.exit_code == 0, (args, result.output)
    assert "so the comparison goes to" in one_line(result.stderr) and written(result).is_file()
