"""The price table is data; costs come from it, and unknown models cost `None`, never zero."""

from __future__ import annotations

import pytest

from agent.models.pricing import DEFAULT_TABLE, cost_usd, find_price, format_usd, load_prices
from core.errors import HarnessError
from core.types import Usage


def test_the_shipped_table_loads_and_every_entry_is_priced():
    table = load_prices()
    assert DEFAULT_TABLE.name == "prices.toml" and table
    for price in table.values():
        if price.provider in ("local", "local-int4"):  # the embedded engine bills nothing per token
            assert price.input == price.output == 0
            continue
        assert price.input > 0 and price.output > 0 and price.cached_input > 0 and price.cache_write >= 1


def test_lookup_by_provider_and_model_with_or_without_a_release_date():
    table = load_prices()
    base = find_price("anthropic:claude-sonnet-4-5", table)
    assert base is not None and base.provider == "anthropic"
    assert find_price("anthropic:claude-sonnet-4-5-20250929", table) == base
    assert find_price("claude-sonnet-4-5", table) == base  # a bare name, as a reply's `model` holds it
    assert find_price("openai:gpt-5-mini-2025-08-07", table).model == "gpt-5-mini"


def test_unknown_models_are_unknown_not_free():
    table = load_prices()
    for model in ("scripted:examples/demo.yaml", "openai:gpt-5.1-codex-max", "anthropic:gpt-5", "mystery"):
        assert find_price(model, table) is None
    assert cost_usd(None, Usage(prompt_tokens=1000, completion_tokens=1000)) is None
    assert format_usd(None) == "unknown"


def test_cost_applies_cache_multipliers(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[acme."m1"]\ninput = 2.0\noutput = 10.0\ncached_input = 0.1\ncache_write = 1.25\n')
    price = find_price("acme:m1", load_prices(path))
    # 1M prompt tokens: 600k uncached, 300k cache reads, 100k cache writes; 100k completion.
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=100_000, cached_tokens=300_000, cache_write_tokens=100_000)
    cost = cost_usd(price, usage)
    assert cost == pytest.approx(0.6 * 2.0 + 0.3 * 2.0 * 0.1 + 0.1 * 2.0 * 1.25 + 0.1 * 10.0)


def test_a_bad_table_says_what_is_wrong(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[acme."m1"]\ninput = 2.0\n')
    with pytest.raises(HarnessError, match="needs `input` and `output`"):
        load_prices(path)
    with pytest.raises(HarnessError, match="Cannot read price table"):
        load_prices(tmp_path / "missing.toml")


def test_the_embedded_model_costs_zero_whatever_it_loads_and_a_users_rate_counts_its_compute(tmp_path):
    table = load_prices()
    usage = Usage(prompt_tokens=2_000_000, completion_tokens=1_000_000)
    for model in ("local", "local:/models/SmolLM2.gguf", "local-int4", "local-int4:/models/x.gguf"):
        price = find_price(model, table)
        assert price is not None and cost_usd(price, usage) == 0.0, model
    assert find_price("scripted:examples/demo.yaml", table) is None  # a wildcard of one provider only
    mine = tmp_path / "prices.toml"
    mine.write_text('[local."*"]\ninput = 0.05\noutput = 0.2\n')
    assert cost_usd(find_price("local:/models/x.gguf", load_prices(mine)), usage) == pytest.approx(0.1 + 0.2)
