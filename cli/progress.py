"""What a person sees while a run goes: a live status line, then a summary table."""

from __future__ import annotations


from rich.console import Console
from rich.status import Status
from rich.table import Table

from core.events import Event, ModelFailed, ModelReplied, ToolObserved
from agent.summary import Summary


class LiveStatus:
    """A journal listener that keeps one status line current: step, tokens, last action."""

    def __init__(self, console: Console):
        self.console = console
        self.status: Status | None = None
        self.tokens = 0
        self.step = 0
        self.last = "starting"

    def __enter__(self) -> LiveStatus:
        self.status = self.console.status(self._line())
        self.status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)

    def __call__(self, event: Event) -> None:
        self.step = event.step
        if isinstance(event, ModelReplied):
            self.tokens += event.reply.usage.prompt_tokens + event.reply.usage.completion_tokens
            calls = event.reply.message.tool_calls
            self.last = "thinking" if not calls else "calling " + ", ".join(c.name for c in calls)
        elif isinstance(event, ToolObserved):
            o = event.observation
            self.last = f"{o.tool} → {o.status}"
            if o.status != "ok":
                self.console.print(f"  [yellow]step {event.step}: {o.tool} {o.status}[/] {o.text.splitlines()[0][:100] if o.text else ''}")
        elif isinstance(event, ModelFailed):
            self.last = "model call failed, retrying" if event.transient else "model call failed"
        if self.status is not None:
            self.status.update(self._line())

    def _line(self) -> str:
        return f"step {self.step} · {self.tokens:,} tokens · {self.last}"


def summary_table(summary: Summary) -> Table:
    table = Table(title=f"run {summary.run_id}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    t = summary.tokens
    colour = "green" if summary.stop_reason in ("submitted", "goal_verified") else "yellow"
    rows = [
        ("stop", f"[{colour}]{summary.stop_reason}[/] — {summary.message}"),
        ("outcome", ", ".join(f"{k}={v}" for k, v in summary.outcome.items()) or "—"),
        ("steps", str(summary.steps)),
        ("tokens", f"prompt {t.prompt:,} (cached {t.cached:,}) · completion {t.completion:,} · reasoning {t.reasoning:,}"),
        ("cache hit rate", f"{summary.cache_hit_rate:.1%}" if summary.cache_hit_rate is not None else "—"),
        ("tool calls", ", ".join(f"{k} {v}" for k, v in summary.tool_calls.items()) or "none"),
        ("errors", ", ".join(f"{k} {v}" for k, v in summary.errors.items()) or "none"),
        ("wall time", f"{summary.wall_s:.2f} s"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table
