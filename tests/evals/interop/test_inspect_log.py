"""`harness export --format inspect`: Inspect AI's own reader and viewer take the log, and it carries the runs'
essentials: one sample per run, its messages, tool events, score, token usage and stop."""

from __future__ import annotations

import functools
import http.server
import json
import threading

import pytest

from evals.interop.exports.write import export
from tests.evals.interop.conftest import folded, summary

log_api = pytest.importorskip("inspect_ai.log", reason="inspect-ai is the `interop` extra: make setup installs it")
CHROMIUM = "/usr/bin/chromium"


def test_read_eval_log_reads_one_sample_per_run_with_its_conversation_and_tools(full_run, tmp_path):
    [path] = export(full_run, "inspect", tmp_path).written
    log = log_api.read_eval_log(str(path))
    run, totals = folded(full_run), summary(full_run)
    assert log.status == "success" and log.eval.task == "full" and log.eval.model == "scripted:full"
    [sample] = log.samples
    assert sample.id == "full" and sample.input.startswith("Task full:")

    assert [m.role for m in sample.messages] == [m.role for m in run.history]
    assert [m.text for m in sample.messages] == [m.text for m in run.history]
    calls = [c for m in sample.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert [(c.id, c.function) for c in calls] == [(c.id, c.name) for s in run.replies for c in s.calls]
    assert calls[2].parse_error is not None  # the arguments that were not JSON
    failed = [m for m in sample.messages if m.role == "tool" and m.error is not None]
    assert [m.tool_call_id for m in failed] == [
        o.call_id for s in run.steps for o in s.observations if o.status != "ok"
    ]

    models = [e for e in sample.events if e.event == "model"]
    tools = [e for e in sample.events if e.event == "tool"]
    assert len(models) == totals["model_calls"] and len(tools) == totals["tool_calls_total"]
    # Each model event's input is the conversation its reply answered, resolved from the message pool.
    assert [len(e.input) for e in models] == [s.history_at for s in run.replies]
    assert [(e.id, e.result) for e in tools] == [(o.call_id, o.text) for s in run.steps for o in s.observations]

    usage = sample.model_usage["scripted:full"]
    tokens = totals["tokens"]
    assert usage.input_tokens + usage.input_tokens_cache_read + usage.input_tokens_cache_write == tokens["prompt"]
    assert usage.input_tokens_cache_read == tokens["cached"] and usage.output_tokens == tokens["completion"]
    assert usage.total_cost == pytest.approx(totals["cost_usd"])
    assert sample.scores["success"].value == "C" and sample.scores["success"].answer == "a.txt holds a"
    assert sample.output.completion == "Done."


def test_a_batch_is_one_log_with_each_runs_verdict_and_stop(batch, tmp_path):
    [path] = export(batch, "inspect", tmp_path).written
    log = log_api.read_eval_log(str(path))
    samples = {s.id: s for s in log.samples}
    assert log.eval.task == "swe-batch" and sorted(samples) == ["budget", "full", "graded"]
    assert samples["graded"].scores["resolved"].value == "I"
    assert samples["budget"].scores["success"].value == "I"
    assert samples["budget"].limit.type == "turn" and samples["budget"].limit.limit == 2
    accuracy = {s.name: s.metrics["accuracy"].value for s in log.results.scores}
    assert accuracy == {"success": 0.5, "resolved": 0.0}
    assert log.stats.model_usage.keys() == {"scripted:full", "scripted:budget", "scripted:graded"}


def test_inspect_view_lists_the_log_and_shows_the_transcript(full_run, tmp_path):
    logs = tmp_path / "logs"
    [path] = export(full_run, "inspect", logs).written
    log_api.bundle_log_dir(str(logs), str(tmp_path / "bundle"))
    listing = json.loads((tmp_path / "bundle" / "logs" / "listing.json").read_text())
    assert listing[path.name]["task"] == "full" and listing[path.name]["status"] == "success"

    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    handler = functools.partial(QuietHandler, directory=str(tmp_path / "bundle"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"http://127.0.0.1:{server.server_port}/")
            # The viewer opens the only log and its only sample: the task, the score, the first tool call.
            page.get_by_text("TOOL: SHELL").first.wait_for(timeout=30_000)
            body = page.inner_text("body")
            browser.close()
    finally:
        server.shutdown()
    assert "Task full: write a.txt" in body and "a.txt holds a" in body and "ls -la" in body


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # the viewer's requests are not the test's output
        pass


def test_a_run_whose_sandbox_never_started_is_a_sample_with_its_error(unstarted_run, tmp_path):
    [path] = export(unstarted_run, "inspect", tmp_path).written
    [sample] = log_api.read_eval_log(str(path)).samples
    assert sample.input == "Task unstarted: never reaches the model." and sample.messages == []
    assert sample.error.message.startswith("environment_error: The sandbox could not be started")
    assert sample.scores["success"].value == "I"


def test_a_compaction_is_a_compaction_event_between_the_steps_it_separates(compacted_run, tmp_path):
    [path] = export(compacted_run, "inspect", tmp_path).written
    [sample] = log_api.read_eval_log(str(path)).samples
    kinds = [e.event for e in sample.events if e.event in ("model", "compaction")]
    assert kinds == ["model", "model", "model", "compaction", "model", "model"]
    [fold] = [e for e in sample.events if e.event == "compaction"]
    [journaled] = [c for s in folded(compacted_run).steps for c in s.compactions]
    assert fold.type == "summary" and fold.metadata["version"] == journaled.version == 1
    assert (fold.tokens_before, fold.tokens_after) == (journaled.tokens_before, journaled.tokens_after)
