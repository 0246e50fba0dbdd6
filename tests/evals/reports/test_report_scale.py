"""A 1,000-step run made by the real loop: its report is quick to make and stays small,
because large observations link to files instead of being inlined."""

from __future__ import annotations

import re
import time

from evals.pricing import load_prices
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.timeline import INLINE_CHARS

LIMIT_S = 10.0
LIMIT_BYTES = 10 * 1024 * 1024


def test_a_thousand_step_report_is_fast_and_small(long_run):
    start = time.perf_counter()
    run = load_run(long_run, load_prices(), price_model="openai:gpt-5")
    path = render_run(run)
    elapsed = time.perf_counter() - start
    size = path.stat().st_size
    assert len(run.steps) == 1000
    assert elapsed < LIMIT_S, f"report took {elapsed:.1f} s"
    assert size < LIMIT_BYTES, f"report is {size / 1e6:.1f} MB"
    html = path.read_text()
    assert html.count('<details class="step') == 1000
    # every tenth step printed a large output: each is clipped here and linked in full
    big = [o for s in run.steps for o in s.observations if len(o.text) > INLINE_CHARS]
    links = set(re.findall(r'href="(artifacts/[^"]+)"', html))
    assert len(big) >= 99 and len(links) >= len(big)
    assert all((long_run / link).is_file() for link in links)
