"""A code-mode run's report shows each run_code call's program calls under it, and says which one failed: in
the markdown summary, as a finding, and in the HTML timeline (real headless Chromium)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.models.pricing import load_prices
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import DispatchPolicy, HarnessPolicy
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.text import run_markdown
from tests.evals.reports.test_html_report import ARTIFACTS, open_page

PROGRAM = """write_file(path='a.txt', content='x')
try:
    replace(path='a.txt', old='nope', new='y')
except ToolError as e:
    print('failed:', e)
print(read_file(path='a.txt'))
"""


@pytest.fixture(scope="module")
def code_run(tmp_path_factory) -> Path:
    replies = [
        ScriptedReply.model_validate({"tool_calls": [{"name": "run_code", "arguments": {"code": PROGRAM}}]}),
        ScriptedReply.model_validate({"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]}),
    ]
    policy = HarnessPolicy(dispatch=DispatchPolicy(mode="code"))
    _, run_dir = start(RunSpec(Task(prompt="x"), ScriptedModel(replies), policy, tmp_path_factory.mktemp("runs")))
    return run_dir


def test_the_summary_names_the_failed_program_call(code_run):
    text = run_markdown(load_run(code_run, load_prices()))
    assert "1 run_code programs made 3 tool calls (write_file ×1, replace ×1, read_file ×1); 1 failed:" in text
    assert "call call_1_0.2 (replace): No change: the text to replace does not occur in a.txt." in text
    assert "**failed_program_call** · Call 2 (replace) of the program of call_1_0 failed (error)" in text


def test_the_timeline_shows_the_program_calls_under_their_run_code(browser, code_run):
    page, problems = open_page(browser, render_run(load_run(code_run, load_prices())))
    step = page.locator("#step-1")
    assert "run_code (3 calls)" in step.locator("summary").first.inner_text()
    program = step.locator("details.program")
    assert program.locator("summary").inner_text().strip() == "The program's calls · 3 · 1 failed"
    inner = program.locator(".call.inner")
    assert inner.count() == 3
    assert [inner.nth(i).locator("code").inner_text() for i in range(3)] == ["write_file", "replace", "read_file"]
    assert "does not occur in a.txt" in inner.nth(1).inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    step.screenshot(path=str(ARTIFACTS / "program-report.png"))
    page.close()
    assert problems == []
