"""Token prices as data (agent/models/prices.toml, or a table of the same shape) and the cost of one call's usage.

The loop prices every model call as it journals it (and `stop.max_cost_usd` stops on the running
total); reports and A/B tables price runs again from a table. Costs are computed from the table,
never hard-coded; a model the table does not know costs `None` ("unknown"), never zero, so a
missing price cannot pass for a free run. The embedded engine is in the table at $0 (it bills nothing per
token); a table that gives it a rate counts its compute.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from core.data_files import load_toml
from core.errors import HarnessError
from core.text_files import read_text_file
from core.types import Usage

DEFAULT_TABLE = Path(__file__).with_name("prices.toml")
# A dated or aliased release of a listed model costs what the listed model costs.
_RELEASE_SUFFIX = re.compile(r"(-\d{4}-?\d{2}-?\d{2}|-latest)?")


@dataclass(frozen=True)
class Price:
    provider: str
    model: str
    input: float  # USD per million uncached prompt tokens
    output: float  # USD per million completion tokens (reasoning included)
    cached_input: float = 1.0  # multiplier of `input` for cache reads
    cache_write: float = 1.0  # multiplier of `input` for cache writes


PriceTable = dict[tuple[str, str], Price]
AMOUNTS = ("input", "output", "cached_input", "cache_write")  # a Price's dollar figures


def load_prices(path: str | Path | None = None) -> PriceTable:
    path = Path(path) if path is not None else DEFAULT_TABLE
    raw = read_text_file(path, "price table")
    try:
        data = load_toml(raw)
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"Price table {path} is not valid TOML: {e}") from None
    table: PriceTable = {}
    for provider, models in data.items():
        if not isinstance(models, dict):
            raise HarnessError(
                f'Price table {path}: `{provider}` must be a table of models, like [{provider}."model"].'
            )
        for model, fields in models.items():
            try:
                price = Price(provider=provider, model=model, **fields)
            except TypeError as e:
                raise HarnessError(
                    f'Price table {path}: [{provider}."{model}"] needs `input` and `output` (USD per million tokens) '
                    f"and may have `cached_input` and `cache_write` multipliers ({e})."
                ) from None
            wrong = next((k for k in AMOUNTS if not _amount(getattr(price, k))), None)
            if wrong is not None:  # priced later, mid-run or mid-report: a string, a list or NaN must not get there
                raise HarnessError(
                    f'Price table {path}: [{provider}."{model}"] `{wrong}` must be a number, zero or more, not '
                    f"{getattr(price, wrong)!r}."
                )
            table[(provider, model)] = price
    return table


def _amount(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def find_price(model: str, table: PriceTable) -> Price | None:
    """`provider:model` or a bare model name; a dated release matches its base entry; a provider's `"*"` entry
    prices any model of it (`[local."*"]`: the embedded engine, whatever file it loads; a bare `local` too)."""
    provider, sep, name = model.partition(":")
    if not sep:
        if (model, "*") in table:
            return table[(model, "*")]
        provider, name = "", model
    candidates = [p for (prov, _), p in table.items() if not provider or prov == provider]
    for price in candidates:
        if name == price.model:
            return price
    for price in candidates:
        if name.startswith(price.model) and _RELEASE_SUFFIX.fullmatch(name[len(price.model) :]):
            return price
    return table.get((provider, "*")) if provider else None


def named_price(model: str, table: PriceTable) -> Price:
    """The price of the model a person named to price runs as (`--price-model`): the table must know it."""
    price = find_price(model, table)
    if price is None:
        raise HarnessError(
            f"The price table has no {model!r}. Name a model it lists (agent/models/prices.toml), "
            "or pass --prices FILE with that model in it."
        )
    return price


@overload
def cost_usd(price: Price, usage: Usage) -> float: ...
@overload
def cost_usd(price: Price | None, usage: Usage | None) -> float | None: ...
def cost_usd(price: Price | None, usage: Usage | None) -> float | None:
    """None when the price or the usage is unknown (a failed call whose provider said nothing of it).

    The usage's prompt count includes cached and cache-written tokens, and its completion count the
    reasoning tokens, as the harness records them (reasoning is billed as output)."""
    if price is None or usage is None:
        return None
    uncached = max(0, usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens)
    per_input = price.input / 1e6
    return (
        uncached * per_input
        + usage.cached_tokens * per_input * price.cached_input
        + usage.cache_write_tokens * per_input * price.cache_write
        + usage.completion_tokens * price.output / 1e6
    )


def format_usd(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def total(costs: Iterable[float | None]) -> tuple[float | None, int]:
    """The known costs summed, and how many were unknown (above 0: the sum is a lower bound); the sum is
    None when every cost was unknown, never zero."""
    costs = list(costs)
    known = [c for c in costs if c is not None]
    unknown = len(costs) - len(known)
    return (sum(known) if known or not unknown else None), unknown


def format_total(value: float | None, unpriced: int) -> str:
    """A run's total, said to be a lower bound when some of its calls had no known cost."""
    if value is None or not unpriced:
        return format_usd(value)
    return f"at least {format_usd(value)} ({unpriced} calls unpriced)"


def price_for(model: str, prices: Path | None, budget: float | None, knob: str = "stop.max_cost_usd") -> Price | None:
    """The model's price from the table; a cost budget (`knob`: the policy's, or a batch's) with no price to
    count it in cannot start."""
    price = find_price(model, load_prices(prices))
    if price is None and budget is not None:
        table = prices or DEFAULT_TABLE
        provider, sep, name = model.partition(":")
        entry = f'[{provider}."{name}"]' if sep else f'[PROVIDER."{model}"]'
        raise HarnessError(
            f"The cost budget {knob} = {budget:g} is set, but the price table {table} has no price for model "
            f"{model!r}, so the cost could not be counted. Add {entry} with `input` and `output` (USD per "
            f"million tokens) to a price table and pass it (--prices FILE), or drop {knob}."
        )
    return price
