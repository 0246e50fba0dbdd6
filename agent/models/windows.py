"""Context windows: the known ones as data (windows.toml), and the one place a run's window is decided."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from agent.models.base import ModelClient
from agent.models.spec import parse_model
from core.errors import HarnessError
from core.policy import ModelParams

TABLE = Path(__file__).with_name("windows.toml")
# A compatible server (a proxy, a gateway) that serves a model under the provider's name serves that model.
PROVIDER = {
    "openai": "openai",
    "openai-compatible": "openai",
    "anthropic": "anthropic",
    "anthropic-compatible": "anthropic",
}


@cache
def known_windows() -> dict[str, dict[str, int]]:
    return tomllib.loads(TABLE.read_text())


def known_window(model: str) -> int | None:
    """The window windows.toml gives a model string: that of the longest listed name its model name starts
    with, so dated snapshots resolve; None when nothing is listed for it."""
    try:
        parsed = parse_model(model)
    except HarnessError:  # a scripted or replayed client's own name
        return None
    table = known_windows().get(PROVIDER.get(parsed.kind, ""), {})
    names = [name for name in table if parsed.name.startswith(name)]
    return table[max(names, key=len)] if names else None


def context_window(model: ModelClient, params: ModelParams) -> int | None:
    """The window a run assumes, in tokens: the policy's `model.context_window`, else what the client knows
    (the local engine's, a server's /v1/models), else windows.toml; None: unknown."""
    if params.context_window is not None:
        return params.context_window
    ask = getattr(model, "context_window", None)  # optional: a scripted client has none
    told = ask(params) if callable(ask) else None
    return told if told is not None else known_window(model.name)
