"""study.html read as a person reads it: headless Chromium at 1280×800, the page fits the width,
no table pushes past it, the sweep's charts are there and none of their labels overlap."""

from __future__ import annotations

from tests.evals.reports.conftest import ARGS, CHROMIUM
from tests.evals.reports.test_layout import CHART_TEXT_BOXES, VIEWPORT, overlaps


def test_the_study_page_fits_1280_pixels_with_its_sweep_charts(scripted_study):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((scripted_study / "study.html").as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
        too_wide = page.evaluate("""() => [...document.querySelectorAll('table')]
            .filter(t => t.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).length""")
        assert too_wide == 0
        charts = page.evaluate(CHART_TEXT_BOXES)
        assert len(charts) == 2  # cached share and throughput across runs in flight
        clashes = [
            (a["text"], b["text"])
            for boxes in charts
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if overlaps(a, b)
        ]
        assert clashes == []
        assert page.locator("table.cache tbody tr").count() == 4  # 2 policies at each of 2 points
        assert page.locator("#pairs .verdict").count() == 2
        assert errors == []
        browser.close()
