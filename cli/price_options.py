"""The options that price recorded runs again (`harness report`, `harness rerender`, `harness ab`): another price
table, and a model to price every run as; and the table they name, checked before any run is read."""

from __future__ import annotations

from pathlib import Path

import typer

from agent.models.pricing import PriceTable, load_prices, named_price

PRICE_TABLE = typer.Option(None, help="A price table (TOML) instead of the one shipped with the harness.")
PRICE_MODEL = typer.Option(None, help="Price every run as this model, e.g. anthropic:claude-sonnet-4-5.")


def price_table(prices: Path | None, price_model: str | None) -> PriceTable:
    """The price table, refused up front when it lacks the model every run is to be priced as: once, before a
    batch's runs are read, rather than once for each of them."""
    table = load_prices(prices)
    if price_model is not None:
        named_price(price_model, table)
    return table
