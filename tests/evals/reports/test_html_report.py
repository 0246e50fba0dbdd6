"""The HTML run report in real headless Chromium: no console errors, no network, and the
timeline, findings, charts and compaction diff are there and work."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agent.models.pricing import load_prices
from evals.reports.detectors import DETECTORS
from evals.reports.html import render_run
from evals.reports.load import load_run

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


@pytest.fixture(scope="module")
def report(rich_run: Path) -> Path:
    return render_run(load_run(rich_run, load_prices(), price_model="anthropic:claude-sonnet-4-5"))


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if not r.url.startswith("file://") else None)
    page.goto(path.as_uri())
    return page, problems


def test_the_report_renders_offline_without_console_errors(browser, report):
    page, problems = open_page(browser, report)
    assert page.title().startswith("Run ")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "run-report.png"), full_page=True)
    page.close()
    assert problems == []


def test_the_page_has_the_timeline_findings_and_plots(browser, report):
    page, problems = open_page(browser, report)
    assert page.locator("#timeline details.step").count() == 13
    rows = page.locator("#findings tbody tr")
    assert rows.count() == len(DETECTORS)
    for name in ("step 5", "step 6", "step 8", "step 10", "step 11", "step 12"):
        assert page.locator("#findings .steplinks a", has_text=re.compile(f"^{name}$")).count() >= 1
    for chart in ("#chart-prompt", "#chart-cumulative", "#chart-cache", "#chart-cost", "#chart-breakdown"):
        svg = page.locator(f"{chart} svg.chart")
        assert svg.count() == 1 and svg.bounding_box()["height"] > 100, chart
    # the two compactions are marked on the prompt chart and shown with their memory diff
    assert page.locator("#chart-prompt .marker").count() == 2
    assert page.locator("#step-10 .compaction .badge.bad", has_text="summary cut off").count() == 1
    assert page.locator("#step-10 .diff .add").count() > 0 and page.locator("#step-10 .diff .del").count() > 0
    # the big output was truncated by the harness: the report says so and links the full text
    assert page.locator("#step-7 .clipnote a[href^='artifacts/']").count() >= 1
    page.close()
    assert problems == []


def test_finding_links_open_their_step_and_filters_work(browser, report):
    from playwright.sync_api import expect  # waits for the page's handlers (hashchange fires after the click)

    page, problems = open_page(browser, report)
    page.locator("#collapse-all").click()
    expect(page.locator("#step-12")).not_to_have_attribute("open", "")
    page.locator("#findings .steplinks a", has_text=re.compile("^step 12$")).click()
    expect(page.locator("#step-12")).to_have_attribute("open", "")
    page.locator("#only-flagged").click()
    flagged = page.locator("#timeline details.step.flagged").count()
    assert 0 < flagged < 13
    expect(page.locator("#shown-count")).to_have_text(f"{flagged} of 13 steps shown")
    page.locator("#only-flagged").click()
    page.select_option("#detector-filter", "timeout")
    expect(page.locator("#shown-count")).to_have_text("1 of 13 steps shown")
    page.close()
    assert problems == []


def test_every_local_link_points_at_a_file_that_exists(report):
    html = report.read_text()
    links = set(re.findall(r'href="(artifacts/[^"]+)"', html))
    assert links and all((report.parent / link).is_file() for link in links)
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html


def test_a_second_report_replaces_the_first_ones_texts(rich_run, tmp_path):
    copy = Path(shutil.copytree(rich_run, tmp_path / rich_run.name))
    stale = copy / "artifacts" / "report" / "stale.txt"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("old")
    render_run(load_run(copy, load_prices()))
    assert not stale.exists()
