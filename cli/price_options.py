"""The options that price recorded runs again (`harness report`, `harness rerender`): another price table,
and a model to price every run as."""

from __future__ import annotations

import typer

PRICE_TABLE = typer.Option(None, help="A price table (TOML) instead of the one shipped with the harness.")
PRICE_MODEL = typer.Option(None, help="Price every run as this model, e.g. anthropic:claude-sonnet-4-5.")
