"""A price table of any content is a table whose every price costs any usage a finite amount of dollars, zero or
more, or one HarnessError saying what is wrong: never a traceback when a run, a report or an A/B table prices."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models.pricing import cost_usd, load_prices
from core.types import Usage
from tests.core.data_texts import read_or_refused, spliced, toml_texts, toml_value, values

FIELDS = ["input", "output", "cached_input", "cache_write"]
WORDS = ["openai", "anthropic", "local", "gpt-4o", "*", *FIELDS]
# Tables of the right shape, [provider."model"] with fields, whose values are anything TOML holds.
shaped = st.dictionaries(
    st.sampled_from(["openai", "local"]),
    st.dictionaries(st.sampled_from(["gpt-4o", "*"]), st.dictionaries(st.sampled_from(FIELDS), values(WORDS))),
).map(lambda table: "".join(f'"{provider}" = {toml_value(models)}\n' for provider, models in table.items()))
usages = st.builds(
    Usage,
    prompt_tokens=st.integers(0, 10**7),
    completion_tokens=st.integers(0, 10**6),
    cached_tokens=st.integers(0, 10**6),
    cache_write_tokens=st.integers(0, 10**6),
)


@settings(max_examples=200, deadline=None)
@given(toml_texts(WORDS) | shaped.flatmap(lambda text: spliced(text, ["nan", "-1", "inf", '"x"'])), usages)
def test_any_price_table_prices_every_usage_or_is_a_clear_error(text, usage):
    table = read_or_refused(text, "prices.toml", load_prices)
    for price in (table or {}).values():
        cost = cost_usd(price, usage)
        assert isinstance(cost, float) and math.isfinite(cost) and cost >= 0
