"""The flattened batch's slot runs against the per-position definition, for all tables and spans."""

from hypothesis import given
from hypothesis import strategies as st

from engine.batch import slots


@st.composite
def spans(draw):
    block_size = draw(st.sampled_from([1, 2, 16, 256]))
    table = draw(st.lists(st.integers(0, 10_000), min_size=1, max_size=40, unique=True))
    start = draw(st.integers(0, len(table) * block_size - 1))
    end = draw(st.integers(start + 1, len(table) * block_size))
    return table, start, end, block_size


@given(spans())
def test_slots_are_each_positions_block_and_offset(span):
    table, start, end, bs = span
    assert slots(table, start, end, bs) == [table[p // bs] * bs + p % bs for p in range(start, end)]
