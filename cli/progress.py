"""What a person sees while work goes on: on a terminal a live status line; piped, a plain heartbeat
line every HARNESS_HEARTBEAT_S seconds (default 30). Then a summary table."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from agent.journal.summary import Summary
from agent.models.pricing import format_total
from cli.output import text
from core.errors import HarnessError
from core.events import Event, ModelFailed, ModelReplied, ToolObserved, ToolProgress

HEARTBEAT_ENV = "HARNESS_HEARTBEAT_S"


def progress_bar(console: Console) -> Progress:
    """A bar over a batch's items on a terminal; piped, none (the commands print a line per finished item
    instead). Each task carries a `note` field, shown after the count; descriptions and notes are shown
    as written (they name instances and tools)."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}", markup=False),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def heartbeat_seconds() -> float:
    raw = os.environ.get(HEARTBEAT_ENV, "30")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise HarnessError(f"{HEARTBEAT_ENV} must be a number of seconds above 0, got {raw!r}.")
    return seconds


class RunState:
    """A journal listener that follows one run: its step, prompt tokens, time so far and last action.
    Given a console, it says each tool call that fails at once, on its own line."""

    def __init__(self, console: Console | None = None):
        self.console = console
        self.started = time.monotonic()
        self.step = 0
        self.prompt_tokens = 0
        self.last = "starting"

    def __call__(self, event: Event) -> None:
        self.step = event.step
        if isinstance(event, ModelReplied):
            self.prompt_tokens += event.reply.usage.prompt_tokens
            calls = event.reply.message.tool_calls
            self.last = "thinking" if not calls else "calling " + ", ".join(c.name for c in calls)
        elif isinstance(event, ToolObserved):
            o = event.observation
            self.last = f"{o.tool} {o.status}"
            if o.status != "ok" and self.console is not None:
                first = o.text.splitlines()[0][:100] if o.text else ""
                self.console.print(text("  ", (f"step {event.step}: {o.tool} {o.status}", "yellow"), f" {first}"))
        elif isinstance(event, ToolProgress):  # a long call saying how far it has got (an MCP server's)
            self.last = f"{event.tool}: {event.text}"
        elif isinstance(event, ModelFailed):
            self.last = "model call failed, retrying" if event.transient else "model call failed"

    def line(self) -> str:
        return f"step {self.step}, {self.prompt_tokens:,} prompt tokens, {time.monotonic() - self.started:.0f} s, {self.last}"


class Lively:
    """A renderable that asks for its text each time it is drawn, so a live display keeps it current."""

    def __init__(self, line: Callable[[], str]):
        self.line = line

    def __rich__(self) -> Text:
        return Text(self.line())


@contextmanager
def heartbeat(console: Console, line: Callable[[], str]) -> Iterator[None]:
    """Off a terminal, print `line()` every heartbeat_seconds() while the block runs; on one, nothing
    (a live display shows the same)."""
    if console.is_terminal:
        yield
        return
    every, stop = heartbeat_seconds(), threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            console.print(text(line()))

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def following_files(
    console: Console, total: int, doing: str, done: str, unit: str, refused: str
) -> Iterator[Callable[..., None]]:
    """A bar over `total` files or folders (and a heartbeat line off a terminal); the callback advances
    it, printing `refused: why` first for one that failed (or `label: why`, where the caller names it)."""
    with progress_bar(console) as bar:
        task = bar.add_task(doing, total=total, note="")

        def advance(path: Path, error: str | None, label: str | None = None) -> None:
            if error is not None:
                console.print(text((f"{label or refused}:", "red"), f" {error}"), soft_wrap=True)
            bar.update(task, advance=1, note=path.name)

        with heartbeat(console, lambda: f"{done} {int(bar.tasks[0].completed)} of {total} {unit}"):
            yield advance


@contextmanager
def following_run(console: Console) -> Iterator[RunState]:
    """A RunState to pass as the run's listener, shown live on a terminal and as heartbeat lines elsewhere."""
    state = RunState(console)
    if console.is_terminal:
        with console.status(Lively(state.line)):
            yield state
    else:
        with heartbeat(console, state.line):
            yield state


def summary_table(summary: Summary) -> Table:
    table = Table(title=text(f"run {summary.run_id}"), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    t = summary.tokens
    colour = "green" if summary.stop_reason in ("submitted", "goal_verified") else "yellow"
    rows: list[tuple[str, str | Text]] = [
        ("stop", text((summary.stop_reason, colour), f" — {summary.message}")),
        ("outcome", ", ".join(f"{k}={v}" for k, v in summary.outcome.items()) or "—"),
        ("steps", str(summary.steps)),
        (
            "tokens",
            f"prompt {t.prompt:,} (cached {t.cached:,}) · completion {t.completion:,} · reasoning {t.reasoning:,}",
        ),
        ("cache hit rate", f"{summary.cache_hit_rate:.1%}" if summary.cache_hit_rate is not None else "—"),
        ("cost", format_total(summary.cost_usd, summary.unpriced_calls)),
        ("tool calls", ", ".join(f"{k} {v}" for k, v in summary.tool_calls.items()) or "none"),
        ("errors", ", ".join(f"{k} {v}" for k, v in summary.errors.items()) or "none"),
        ("wall time", f"{summary.wall_s:.2f} s"),
    ]
    for key, value in rows:
        table.add_row(key, text(value))
    return table
