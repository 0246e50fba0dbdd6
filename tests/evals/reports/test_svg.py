"""The inline SVG charts are well-formed XML for any data, and their axes cover the data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.reports.svg import nice_ticks, usd
from evals.reports.svg_bars import hbars, stacked_bars
from evals.reports.svg_lines import Marker, Series, line_chart
from evals.reports.svg_scatter import Point, scatter

values = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6), st.floats(min_value=0, max_value=1e6))
def test_ticks_cover_the_range(lo, span):
    ticks = nice_ticks(lo, lo + span)
    assert ticks[0] <= lo and ticks[-1] >= lo + span and ticks == sorted(ticks) and len(ticks) <= 12


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=1, max_size=600), st.text(max_size=20))
def test_line_chart_is_well_formed(ys, name):
    svg = line_chart(
        [Series(name or "s", list(enumerate(ys, 1)), "#123456", "area")],
        "t<&>",
        "step",
        "tokens",
        markers=[Marker(1.5, "compaction <1>")],
    )
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and root.get("viewBox")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(values, values), min_size=1, max_size=400))
def test_stacked_bars_bin_long_runs_and_stay_well_formed(rows):
    xs = list(range(1, len(rows) + 1))
    svg = stacked_bars(
        xs,
        {"a": [r[0] for r in rows], "b": [r[1] for r in rows]},
        {"a": "#111", "b": "#222"},
        "t",
        "x",
        "y",
        max_bars=100,
    )
    root = ET.fromstring(svg)
    groups = root.findall("{http://www.w3.org/2000/svg}g")
    assert len(groups) <= 100


def test_scatter_and_horizontal_bars_are_well_formed():
    ET.fromstring(
        scatter(
            [Point("A", 1.0, 0.5, "#000", (0.8, 1.2), (0.4, 0.6)), Point("B & co", 2.0, 0.9, "#111")],
            "t",
            "cost",
            "success",
        )
    )
    ET.fromstring(hbars(["one", "two <2>"], [0, 3], "t"))


def test_empty_data_says_so_instead_of_drawing():
    assert "No data" in line_chart([], "Prompt", "x", "y")
    assert "No data" in stacked_bars([], {}, {}, "Parts", "x", "y")


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_integer_ticks_are_whole_numbers_that_cover_the_range(lo, span):
    ticks = nice_ticks(lo, lo + span, 6, integer=True)
    assert all(float(t).is_integer() for t in ticks) and ticks[0] <= lo and ticks[-1] >= lo + span


def test_step_axes_get_whole_ticks():
    svg = line_chart([Series("s", [(1, 5.0), (2, 7.0), (3, 6.0)], "#123456")], "t", "step", "tokens")
    ticks = [
        t.text
        for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")
        if t.get("text-anchor") == "middle" and t.get("class") == "tick"
    ]
    assert ticks == ["1", "2", "3"]


def test_labels_of_coinciding_points_are_placed_apart():
    svg = scatter(
        [Point("A", 1.0, 0.5, "#111111"), Point("B", 1.0, 0.5, "#222222"), Point("C", 1.02, 0.51, "#333333")],
        "t",
        "x",
        "y",
        y_range=(0.0, 1.0),
    )
    labels = [t for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "point-label"]
    assert [t.text for t in labels] == ["A", "B", "C"]

    def box(t):  # 12 px type: a character at most 7.6 px wide, 14 px from top to bottom
        x, y, w = float(t.get("x")), float(t.get("y")), 7.6 * len(t.text)
        x0 = x - w if t.get("text-anchor") == "end" else x
        return x0, y - 11, x0 + w, y + 3

    boxes = [box(t) for t in labels]
    assert not any(
        a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3] for i, a in enumerate(boxes) for b in boxes[i + 1 :]
    )


def test_a_long_legend_wraps_inside_the_chart():
    series = [Series(f"a-rather-long-task-name-{i}", [(1, i), (2, i + 1)], "#123456") for i in range(8)]
    root = ET.fromstring(line_chart(series, "t", "step", "tokens"))
    width = float(root.get("viewBox").split()[2])
    legend = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "legend"]
    assert len({t.get("y") for t in legend}) > 1
    assert all(float(t.get("x")) + 6.4 * len(t.text) <= width for t in legend)


def test_wide_y_tick_labels_push_the_plot_right_of_the_axis_title():
    svg = line_chart([Series("cost", [(1, 0.0), (2, 0.0125), (3, 0.0113)], "#123456")], "t", "step", "USD", y_fmt=usd)
    ticks = [t for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text") if t.get("text-anchor") == "end"]
    assert max(len(t.text) for t in ticks) >= 6
    assert all(float(t.get("x")) - 6.0 * len(t.text) >= 20 for t in ticks)  # the rotated title ends near x = 18
