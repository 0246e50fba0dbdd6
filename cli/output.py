"""Where the commands write. On a terminal: rich tables, colours and live displays. Piped or in CI:
plain lines, flushed as they are printed, and tables as wide as their longest cell, so no name is cut.
A command that fails on a `HarnessError` prints its message on stderr, not a traceback, and exits 2.

What is printed is text, never markup: much of it came from a model, a tool, a task or a file, where
`[bold]` or `root:x:0:0` (rich's `:x:` emoji code) are data. So the consoles read no markup, emoji
codes or highlighting in any string, and the harness's own colours are styles on parts of a `text()`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from rich.text import Text

from core.errors import HarnessError
from core.interrupts import EXIT_CODES, Abandoned, requested, signals_handled

PIPED_WIDTH = 10_000  # rather than the 80 columns rich assumes off a terminal: nothing is cut or folded
P = ParamSpec("P")
R = TypeVar("R")


class WideWhenPiped(Console):
    """Reads no markup, emoji codes or highlighting in any string it prints (the module docstring says why)."""

    def __init__(self, stderr: bool = False):
        super().__init__(stderr=stderr, markup=False, emoji=False, highlight=False)

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


def text(*parts: str | Text | tuple[str, str]) -> Text:
    """A line or a cell as written: each part a str (or a `text()`), or (str, style) for the harness's own emphasis.
    Whatever a part holds, rich reads no markup or emoji code in it (a `Text` is never highlighted)."""
    return Text.assemble(*parts)


def warn(*parts: str, label: str = "warning") -> None:
    """One warning (or note) line on stderr, as written."""
    stderr.print(text((f"{label}:", "yellow"), " " + ": ".join(parts)), soft_wrap=True)


def print_json(data: object) -> None:
    """The result of a `--json` command: one JSON document on stdout, nothing else there."""
    console.file.write(json.dumps(data, indent=2) + "\n")
    console.file.flush()


def stops_on_signal(command: Callable[P, R]) -> Callable[P, R]:
    """Wraps a command that runs agents: SIGINT (Ctrl-C) and SIGTERM stop its runs at their next safe point, each
    with its stop, snapshot and summary written (core.interrupts; the policy's checkpoint.on_signal decides about
    the call in flight), and the command then exits as a shell reports the signal: 130 for SIGINT, 143 for
    SIGTERM. Runs it had not started are left unstarted."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        stopped: str | None = None
        try:
            with signals_handled():
                try:
                    result = command(*args, **kwargs)
                finally:
                    stopped = requested()
        except typer.Exit:
            if stopped is None:
                raise
        except Abandoned as e:  # a run stopped while it was being opened
            stopped = e.signal_name
        if stopped is not None:
            warn(f"stopped by {stopped}: each run it stopped has its summary; `harness resume RUN_DIR` goes on")
            raise typer.Exit(EXIT_CODES[stopped])
        return result

    return run


def exits_on_error(command: Callable[P, R]) -> Callable[P, R]:
    """Wraps a command: a `HarnessError` is printed on stderr as `error: MESSAGE` and the command exits 2.
    On stderr, as the usage errors of the options are, so a script that reads stdout (a table, JSON, a
    path) never mistakes the message for a result."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except HarnessError as e:
            stderr.print(text(("error:", "red"), f" {e}"), soft_wrap=True)
            raise typer.Exit(2) from None

    return run
