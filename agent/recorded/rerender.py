"""Counterfactual re-render: the prompt every step would have had under another context policy.

Built from the journal alone — no model, no sandbox. The model's replies and
the tool results are held fixed at what was recorded; only the prompt around
them is rebuilt. Under another policy a real model might have replied
differently, so these are the costs of the same trajectory, not of another run.
Compaction, which needs a summariser, uses the extractive one (no model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from agent.journal.fold import fold
from core.context_policy import Compact, ContextStep, check_window
from core.events import Event
from core.memory_types import Fold
from core.types import Message, Usage
from memory.extractive import ExtractiveSummariser
from memory.prefix import PrefixReuse, RadixTree
from memory.render import Renderer
from memory.tokens import TokenCounter
from tools.base import Tool
from tools.disclosure import disclosure, request_tools, tools_text, with_describe_tool

HELD_FIXED = (
    "The model's replies and the tool results are held fixed at what the journal recorded; only the prompt "
    "each step would have been sent is rebuilt. Compaction uses the extractive summariser (no model)."
)


@dataclass
class StepCost:
    step: int
    prompt_tokens: int
    reused: int  # ideal prefix reuse: tokens shared with an earlier request of the run
    messages: int
    recorded: Usage = Usage()  # what the provider said of the recorded reply: its prompt as the source counted it


@dataclass
class Request:
    kind: str  # "agent" or "summariser"
    step: int
    messages: list[Message]
    tools: list[Tool]


@dataclass
class Rerendered:
    steps: list[StepCost] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)  # every request in order, kept only when asked for
    folds: list[Fold] = field(default_factory=list)
    summariser: Usage = Usage()
    # Summariser prompt tokens an ideal cache over every earlier request of the run (agent and summariser)
    # would serve: a summary asked for by forking the agent's prompt shares its prefix.
    summariser_reused: int = 0
    cut_offs: int = 0
    tools_tokens: int = 0

    @property
    def total(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def peak(self) -> int:
        return max((s.prompt_tokens for s in self.steps), default=0)

    @property
    def reuse_rate(self) -> float | None:
        return round(sum(s.reused for s in self.steps) / self.total, 4) if self.total else None


def replay_history(events: Iterable[Event]):
    """Yield (step, history before that step's reply, the reply, the folds and the cuts the run had made by then)
    for every model call, in order."""
    run = fold(events)
    for step in run.replies:
        yield step.n, run.history[: step.history_at], step.reply, run.folds_before(step), run.cuts_before(step)


def rerender(
    events: Sequence[Event],
    context: Sequence[ContextStep],
    counter: TokenCounter,
    tools: Sequence[Tool] = (),
    keep_prompts: bool = False,
    recorded_folds: bool = False,
    window: int | None = None,
    memory: Callable[[int], str | None] | None = None,
    show_memory: bool = True,
    disclose_over: int | None = None,
) -> Rerendered:
    """`disclose_over`: the policy's mcp_disclose_over_tokens, past which its tools are disclosed progressively
    without a disclose_tools step, as the loop does (tools.disclosure.disclosure). `recorded_folds`: use the compactions the run journaled (re-rendering its own policy)
    instead of folding again with the extractive summariser. `window`: the model's context window
    (the run's, or one given), for compaction budgets given as a share of it. `memory`: the agent's memory as of
    a step (agent.memory_store.recorded_memory), which a fold made again keeps; `show_memory`: False leaves the
    memory's notes out of every prompt, as a policy without the memory tool would."""
    check_window(context, window)
    disclose = disclosure(context, tools, disclose_over, lambda t: len(counter.text_ids(t)))
    shown = request_tools(with_describe_tool_list(tools) if disclose else tools, disclose)
    text = tools_text(shown) if shown else ""
    requests: list[Request] = []
    # Every request's tokens, for the summariser's reuse; only a policy that compacts again asks a summariser.
    every = RadixTree() if not recorded_folds and any(isinstance(s, Compact) for s in context) else None
    summariser = _Recording(ExtractiveSummariser(counter), requests if keep_prompts else None, every)
    out = Rerendered(tools_tokens=len(counter.text_ids(text)) if text else 0, requests=requests)
    renderer = Renderer(context, counter, text, window, show_memory)  # the loop's pipeline, rendering and compaction
    reuse = PrefixReuse()
    previous_step = 0
    for step, history, reply, journaled, cuts in replay_history(events):
        if recorded_folds:  # the run's own folds and overflow cuts; another policy's run would have made its own
            out.folds = list(journaled)
        elif previous_step:
            summariser.step = step
            kept = partial(memory, previous_step) if memory is not None and show_memory else None
            result = renderer.compact_if_due(history, out.folds, previous_step, summariser, shown, None, kept)
            if result is not None:
                out.summariser = out.summariser + result.usage
                out.summariser_reused = summariser.reused
                out.cut_offs += sum(a.finish_reason == "length" for a in result.attempts)
                if result.fold is not None:
                    out.folds.append(result.fold)
        prompt = renderer.render(history, out.folds, cuts if recorded_folds else None)
        ids = counter.prompt_ids(prompt, text)
        out.steps.append(StepCost(step, len(ids), reuse.add(ids), len(prompt), reply.usage if reply else Usage()))
        if every is not None:
            every.insert(ids)
        if keep_prompts:
            out.requests.append(Request("agent", step, prompt, list(shown)))
        previous_step = step
    return out


class _Recording:
    """Passes summary requests through, noting each one (a benchmark sends them to an engine too) and, given the
    tree of the run's requests, how many of its prompt tokens an ideal cache would serve."""

    def __init__(self, inner: ExtractiveSummariser, sink: list | None, every: RadixTree | None):
        self.inner, self.sink, self.every, self.step, self.reused = inner, sink, every, 0, 0

    def summarise(self, request):
        if self.sink is not None:
            self.sink.append(Request("summariser", self.step, list(request.messages), list(request.tools)))
        reply = self.inner.summarise(request)
        if self.every is not None:
            counter = self.inner.counter
            ids = counter.prompt_ids(request.messages, tools_text(request.tools) if request.tools else "")
            # The reply's count leaves the tool schemas out: the share served is of that count.
            self.reused += min(self.every.longest_prefix(ids), reply.usage.prompt_tokens)
            self.every.insert(ids)
        return reply


def with_describe_tool_list(tools: Sequence[Tool]) -> list[Tool]:
    from tools.base import Registry

    return list(with_describe_tool(Registry.of(tools)))
