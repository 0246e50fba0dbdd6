"""`harness view` as a person uses it: the real HTTP server over a runs folder, read by headless Chromium. The page
lists batches and runs with status, cost and drift, filters and searches them, opens a run's steps (replies,
calls, observations, the context each prompt had, the prompt rebuilt on demand) and a 150-step run in under two
seconds; a chess batch of 20 games, running in a process of its own, fills in on the page without a reload."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy, StopPolicy
from tests.agent.helpers import call
from tests.evals.reports.conftest import ARGS, CHROMIUM

uvicorn = pytest.importorskip("uvicorn", reason="uvicorn (the serve extra) serves the viewer")
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "tests" / "artifacts"
VIEWPORT = {"width": 1280, "height": 800}
STEPS = 150


def long_run(out: Path) -> Path:
    """A finished run of STEPS steps: reads of one file (re-reads, so drift), then a submission."""
    task = Task(
        id="long", prompt="Read a.txt again and again.", files={"a.txt": "\n".join(f"line {i}" for i in range(9))}
    )
    replies = [call("read_file", path="a.txt") for _ in range(STEPS - 1)] + [call("submit", answer="read")]
    policy = HarnessPolicy(stop=StopPolicy(max_steps=STEPS + 5, max_repeats=10_000))
    _, run_dir = start(RunSpec(task, ScriptedModel(replies), policy, out, run_id="long-run"))
    return run_dir


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    long_run(root / "batch-long")
    return root


@pytest.fixture(scope="module")
def server(folder):
    from evals.view.app import make_app

    sock = socket.create_server(("127.0.0.1", 0))
    app_server = uvicorn.Server(uvicorn.Config(make_app(folder), log_level="warning"))
    thread = threading.Thread(target=app_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    for _ in range(100):
        if app_server.started:
            break
        time.sleep(0.1)
    yield url
    app_server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        yield page
        browser.close()


def rows(page, batch: str | None = None) -> int:
    where = f'.batch[data-batch="{batch}"] .run' if batch is not None else ".run"
    return page.locator(where).count()


def fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]


def test_a_150_step_run_opens_in_under_two_seconds_with_its_steps_and_drift(server, page):
    page.goto(server)
    page.wait_for_selector(".run")
    began = time.perf_counter()
    page.goto(server + "#run=batch-long/long-run")
    page.wait_for_function(f"document.querySelectorAll('#steps .step').length === {STEPS}")
    opened = time.perf_counter() - began
    assert opened < 2.0, f"the {STEPS}-step run took {opened:.2f} s to open"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "view-run.png"))
    fits(page)
    second = page.locator("#step-2")
    assert "read_file" in second.inner_text() and "re_read" in second.inner_text()
    assert "messages of" in second.locator("div.ctx").first.inner_text()  # what the policy put in the prompt
    assert "submitted" in page.locator(".facts").inner_text()
    second.locator("details", has_text="the prompt this step was sent").locator("summary").click()
    page.wait_for_function("document.querySelector('#step-2 details:last-of-type div div')")
    assert "Read a.txt again and again." in second.inner_text()


def test_the_list_filters_and_searches(server, page):
    page.goto(server)
    page.wait_for_selector(".run")
    assert rows(page) >= 1 and "drift" in page.locator(".run").first.inner_text()
    page.fill("#search", "no such task anywhere")
    assert rows(page) == 0
    page.fill("#search", "long")
    assert rows(page) == 1
    page.select_option("#status", "running")
    assert rows(page) == 0
    page.select_option("#status", "")
    page.fill("#search", "")


@pytest.mark.slow
def test_a_running_chess_batch_fills_in_without_a_reload(server, page, folder):
    out = folder / "chess"
    out.mkdir()
    batch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "chess",
            "--model",
            "player:random",
            "--games",
            "20",
            "--max-plies",
            "4",
            "--opponent",
            "stockfish:skill=0",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        page.goto(server)
        page.wait_for_selector(".run")
        seen = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            games = page.evaluate(
                "[...document.querySelectorAll('.batch')].filter(b => b.dataset.batch.startsWith('chess/')).reduce((n, b) => n + b.querySelectorAll('.run').length, 0)"
            )
            if not seen or games != seen[-1]:
                seen.append(games)
            if games == 20 and batch.poll() is not None:
                break
            time.sleep(0.5)
        page.screenshot(path=str(ARTIFACTS / "view-live.png"))
        fits(page)
        assert batch.wait(timeout=60) == 0, batch.stderr.read().decode()[-2000:] if batch.stderr else ""
        assert seen[-1] == 20
        assert len([n for n in seen if 0 < n < 20]) >= 2, f"the page went {seen}: games did not land one by one"
        page.wait_for_function("!document.getElementById('live').textContent.includes('running')", timeout=10_000)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()


def test_the_command_serves_the_folder_and_says_where(folder):
    import json
    import urllib.request

    server = subprocess.Popen(
        [sys.executable, "-m", "cli", "view", str(folder), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("harness view of ") and " at http://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        for _ in range(100):
            try:
                listing = json.loads(urllib.request.urlopen(url + "api/listing", timeout=30).read())
                break
            except OSError:
                time.sleep(0.2)
        assert any(r["run_id"] == "long-run" for r in listing["runs"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_folder_that_is_not_there_or_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, ["view", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "is not a folder" in result.output
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["view", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 2 and f"Port {port} on 127.0.0.1 is in use" in result.output
