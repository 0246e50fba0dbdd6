"""`harness export` as a user meets it: where files go, the same bytes when run again, and one-line errors."""

from __future__ import annotations

import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def export(*args):
    return runner.invoke(app, ["export", *map(str, args)])


def test_export_writes_beside_the_run_by_default_and_the_same_bytes_again(full_run, tmp_path):
    run_dir = shutil.copytree(full_run, tmp_path / "full")
    first = export(run_dir, "--format", "atif")
    assert first.exit_code == 0, first.output
    written = run_dir / "full.atif.json"
    assert f"wrote {written}" in first.output
    before = written.read_bytes()
    assert export(run_dir, "-f", "atif").exit_code == 0 and written.read_bytes() == before

    inspect = export(run_dir, "--format", "inspect", "--out", tmp_path / "logs")
    assert inspect.exit_code == 0, inspect.output
    [log] = (tmp_path / "logs").iterdir()
    assert log.name.endswith(".json") and log.name[:4].isdigit() and "_full_" in log.name
    again = log.read_bytes()
    assert export(run_dir, "--format", "inspect", "--out", tmp_path / "logs").exit_code == 0
    assert [p.read_bytes() for p in (tmp_path / "logs").iterdir()] == [again]


def test_a_folder_that_is_not_a_run_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = export(tmp_path, "--format", "atif")
    assert result.exit_code == 2
    assert result.output.startswith("error:") and "neither a run directory" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert export(tmp_path / "missing", "--format", "inspect").exit_code == 2


def test_a_damaged_journal_is_one_line_and_exit_2(full_run, tmp_path):
    run_dir = shutil.copytree(full_run, tmp_path / "full")
    files = set(run_dir.iterdir())
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "events.jsonl").write_text("".join(lines[:3] + lines[5:]))  # two written events lost
    result = export(run_dir, "--format", "inspect")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "events.jsonl is damaged" in result.output and "missing" in result.output
    assert set(run_dir.iterdir()) == files  # nothing written


def test_a_batch_exports_its_readable_runs_and_names_the_damaged_one(batch, tmp_path):
    folder = shutil.copytree(batch, tmp_path / "swe-batch")
    (folder / "budget" / "run.json").write_text("{not json")
    result = export(folder, "--format", "atif", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["full.atif.json", "graded.atif.json"]
    [error] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "budget/run.json is invalid" in error


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that takes every batch of spans (200), or refuses them all (400)."""

    status = 200
    batches: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.status == 200:
            self.batches.append(body)
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def collector():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    Collector.batches = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_spans_an_endpoint_does_not_take_are_not_reported_sent(batch, collector):
    url = f"http://127.0.0.1:{collector.server_port}"
    Collector.status = 200
    taken = export(batch, "--format", "otel", "--otel-endpoint", url)
    assert taken.exit_code == 0, taken.output
    assert [line for line in taken.output.splitlines() if line.startswith("sent ")] == [
        f"sent {batch / name} to {url}/v1/traces" for name in ("budget", "full", "graded")
    ]
    assert Collector.batches

    Collector.status = 400
    refused = export(batch, "--format", "otel", "--otel-endpoint", url)
    assert refused.exit_code == 2
    assert not any(line.startswith("sent ") for line in refused.output.splitlines())
    errors = [line for line in refused.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 3 and "did not take its spans" in errors[0]
    assert all("did not take an earlier run's spans" in e for e in errors[1:])
