"""Where the commands write. On a terminal: rich tables, colours and live displays. Piped or in CI:
plain lines, flushed as they are printed, and tables as wide as their longest cell, so no name is cut."""

from __future__ import annotations

import json

from rich.console import Console, ConsoleDimensions

PIPED_WIDTH = 10_000  # rather than the 80 columns rich assumes off a terminal: nothing is cut or folded


class WideWhenPiped(Console):
    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = WideWhenPiped()
# Feedback while a command that prints JSON runs: beside the JSON, never inside it.
stderr = WideWhenPiped(stderr=True)


def print_json(data: object) -> None:
    """The result of a `--json` command: one JSON document on stdout, nothing else there."""
    console.file.write(json.dumps(data, indent=2) + "\n")
    console.file.flush()
