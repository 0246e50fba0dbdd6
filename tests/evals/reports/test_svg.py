"""The inline SVG charts are well-formed XML for any data, and their axes cover the data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.reports.svg import Marker, Point, Series, hbars, line_chart, nice_ticks, scatter, stacked_bars

values = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6), st.floats(min_value=0, max_value=1e6))
def test_ticks_cover_the_range(lo, span):
    ticks = nice_ticks(lo, lo + span)
    assert ticks[0] <= lo and ticks[-1] >= lo + span and ticks == sorted(ticks) and len(ticks) <= 12


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=1, max_size=600), st.text(max_size=20))
def test_line_chart_is_well_formed(ys, name):
    svg = line_chart([Series(name or "s", list(enumerate(ys, 1)), "#123456", "area")], "t<&>", "step", "tokens",
                     markers=[Marker(1.5, "compaction <1>")])
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and root.get("viewBox")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(values, values), min_size=1, max_size=400))
def test_stacked_bars_bin_long_runs_and_stay_well_formed(rows):
    xs = list(range(1, len(rows) + 1))
    svg = stacked_bars(xs, {"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, {"a": "#111", "b": "#222"}, "t", "x", "y",
                       max_bars=100)
    root = ET.fromstring(svg)
    groups = root.findall("{http://www.w3.org/2000/svg}g")
    assert len(groups) <= 100


def test_scatter_and_horizontal_bars_are_well_formed():
    ET.fromstring(scatter([Point("A", 1.0, 0.5, "#000", (0.8, 1.2), (0.4, 0.6)), Point("B & co", 2.0, 0.9, "#111")],
                          "t", "cost", "success"))
    ET.fromstring(hbars(["one", "two <2>"], [0, 3], "t"))


def test_empty_data_says_so_instead_of_drawing():
    assert "No data" in line_chart([], "Prompt", "x", "y")
    assert "No data" in stacked_bars([], {}, {}, "Parts", "x", "y")
