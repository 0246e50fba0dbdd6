"""Where one policy's line crosses another's: the crossover marked on the sweep's charts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evals.study.sweep import crossovers

ys = st.floats(0, 1, allow_nan=False)


def test_two_lines_that_swap_order_cross_once_between_the_two_settings():
    assert crossovers([(1, 0.9), (4, 0.5)], [(1, 0.7), (4, 0.7)]) == [pytest.approx((2.5, 0.7))]


def test_a_line_that_stays_above_never_crosses():
    assert crossovers([(1, 0.9), (4, 0.8), (16, 0.7)], [(1, 0.5), (4, 0.6), (16, 0.69)]) == []


@given(st.lists(st.tuples(ys, ys), min_size=2, max_size=8))
def test_every_crossing_lies_between_its_settings_and_on_both_lines(values):
    xs = [float(2**i) for i in range(len(values))]
    first = [(x, a) for x, (a, _) in zip(xs, values, strict=True)]
    other = [(x, b) for x, (_, b) in zip(xs, values, strict=True)]
    for x, y in crossovers(first, other):
        i = max(k for k in range(len(xs)) if xs[k] <= x)
        if xs[i] == x:
            assert abs(first[i][1] - other[i][1]) < 1e-9
            continue
        t = (x - xs[i]) / (xs[i + 1] - xs[i])
        on_first = first[i][1] + t * (first[i + 1][1] - first[i][1])
        on_other = other[i][1] + t * (other[i + 1][1] - other[i][1])
        assert abs(on_first - y) < 1e-9 and abs(on_other - y) < 1e-6
    signs = [b - a for (a, b) in values]
    changes = sum(1 for d0, d1 in zip(signs, signs[1:], strict=False) if d0 * d1 < 0 or (d0 == 0 and d1 != 0))
    assert len(crossovers(first, other)) == changes
