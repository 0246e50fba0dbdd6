"""A 1,000-step run made by the real loop: its report stays small, because large observations
link to files instead of being inlined. (How fast it renders is benchmarks/bench_report.py's job.)"""

from __future__ import annotations

import re

import pytest

from agent.models.pricing import load_prices
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.timeline import INLINE_CHARS

LIMIT_BYTES = 10 * 1024 * 1024


@pytest.mark.slow
def test_a_thousand_step_report_is_small(long_run):
    run = load_run(long_run, load_prices(), price_model="openai:gpt-5")
    path = render_run(run)
    size = path.stat().st_size
    assert len(run.steps) == 1000
    assert size < LIMIT_BYTES, f"report is {size / 1e6:.1f} MB"
    html = path.read_text()
    assert html.count('<details class="step') == 1000
    # every tenth step printed a large output: each is clipped here and linked in full
    big = [o for s in run.steps for o in s.observations if len(o.text) > INLINE_CHARS]
    links = set(re.findall(r'href="(artifacts/[^"]+)"', html))
    assert len(big) >= 99 and len(links) >= len(big)
    assert all((long_run / link).is_file() for link in links)
