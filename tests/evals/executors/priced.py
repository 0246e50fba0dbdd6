"""A scripted chess player whose every game costs exactly $1 at its price table's price."""

from __future__ import annotations

from pathlib import Path

SCRIPT = "- tool_calls: [{name: resign}]\n  usage: {prompt_tokens: 1000}\n"  # one reply: resign, at once


def dollar_a_game(folder: Path) -> tuple[str, Path]:
    """The model string of a player that resigns in its first reply, and a table pricing that reply at $1."""
    script = folder / "resign.yaml"
    script.write_text(SCRIPT)
    prices = folder / "prices.toml"
    prices.write_text(f'[scripted."{script}"]\ninput = 1000.0\noutput = 0.0\n')  # USD per million tokens
    return f"scripted:{script}", prices
