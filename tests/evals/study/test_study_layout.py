"""study.html read as a person reads it: headless Chromium at 1280×800, the page fits the width,
no table pushes past it, the sweep's charts are there and none of their labels overlap."""

from __future__ import annotations

from tests.evals.reports.conftest import browser  # noqa: F401  (the fixture: one headless Chromium)
from tests.evals.reports.test_layout import VIEWPORT, check_fits


def test_the_study_page_fits_1280_pixels_with_its_sweep_charts(browser, scripted_study):  # noqa: F811
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((scripted_study / "study.html").as_uri())
    assert len(check_fits(page)) == 2  # cached share and throughput across runs in flight
    assert page.locator("table.cache tbody tr").count() == 4  # 2 policies at each of 2 points
    assert page.locator("#pairs .verdict").count() == 2
    assert errors == []
    page.close()
