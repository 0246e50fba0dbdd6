"""Reports of runs that did not end cleanly: the model failed, or the process died mid-write."""

from __future__ import annotations

import shutil

from conftest import make_run, reply

from agent.models.pricing import load_prices
from core.policy import HarnessPolicy
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.text import run_markdown


def test_a_run_whose_model_failed_shows_the_failure_at_its_step(tmp_path):
    # two replies, then the scripted model has nothing more to say: a permanent model error at step 3
    script = [
        reply("look", ("shell", {"command": "ls"}), prompt=500),
        reply("again", ("shell", {"command": "pwd"}), prompt=600),
    ]
    run_dir = make_run(tmp_path, script, HarnessPolicy(name="short"), task_id="fails")
    run = load_run(run_dir, load_prices())
    assert run.summary.stop_reason == "model_error"
    last = run.steps[-1]
    assert last.n == 3 and last.reply is None and last.failures
    html = render_run(run).read_text()
    assert 'id="step-3"' in html and "model call failed" in html
    assert "(stop: model_error)" in run_markdown(run)


def test_a_crashed_run_without_a_summary_and_with_a_torn_last_line(rich_run, tmp_path):
    crashed = tmp_path / rich_run.name
    shutil.copytree(rich_run, crashed)
    (crashed / "summary.json").unlink()
    lines = (crashed / "events.jsonl").read_text().splitlines(keepends=True)
    kept = lines[: next(i for i, line in enumerate(lines) if '"run_stopped"' in line)]  # it died before its stop
    (crashed / "events.jsonl").write_text("".join(kept) + kept[-1][: len(kept[-1]) // 2])  # a torn write
    run = load_run(crashed, load_prices())
    torn = len(kept) + 1
    assert run.journal_notes == [
        f"events.jsonl has a torn tail at line {torn}: it was cut short mid-write (the process died writing it); "
        f"the {len(kept)} events before it are read"
    ]
    assert run.summary.stop_reason == "unfinished" and run.summary.steps == 13
    html = render_run(run).read_text()
    assert f"torn tail at line {torn}" in html and 'id="step-13"' in html
