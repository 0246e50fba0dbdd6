"""Render the prompt from the history, the folds made so far and the policy's context steps.

A `Renderer` is one run's context pipeline (the loop's, a re-render's): one stage per step
(memory.context.STAGES), each keeping what it rendered last, so a prompt costs what changed
since the previous one. It also decides when to compact, for the loop and for re-renders
alike. `render` is the same pipeline from scratch, for a one-off prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from core.context_policy import Compact, ContextStep
from core.memory_types import Fold
from core.types import Message
from memory.compaction import CompactionResult, compact, due
from memory.context import STAGES, FoldStage, WithoutMemory
from memory.summariser import Summariser
from memory.tokens import TokenCounter, shared_prefix


class Renderer:
    """`counter` and `tools_text` (the tool schemas sent with every prompt) are needed to compact; `window`
    (the model's context window, None: unknown) for compaction budgets given as a share of it ("80%");
    `memory`: False leaves the agent's memory notes out of every prompt."""

    def __init__(
        self,
        steps: Sequence[ContextStep],
        counter: TokenCounter | None = None,
        tools_text: str = "",
        window: int | None = None,
        memory: bool = True,
    ):
        self.stages = [STAGES[type(step)](step) for step in steps]
        self.compact = compact_step(steps)
        if self.compact is None:  # an overflow recovery may fold steps under any policy
            self.stages.insert(0, FoldStage())
        if not memory:  # the agent's memory notes left out (a re-render of a run that kept some)
            self.stages.append(WithoutMemory())
        self.counter, self.tools_text, self.window = counter, tools_text, window
        self.seen: list[Message] = []  # the history of the last render
        self.cut: dict[int, Message] = {}  # history index -> its message as cut (one object: renders compare fast)
        self.counted: list[Message] = []  # the last prompt counted, and its tokens up to each message
        self.marks = [0]

    def render(
        self, history: Sequence[Message], folds: Sequence[Fold] = (), cuts: Mapping[int, str] | None = None
    ) -> list[Message]:
        """The prompt, a new list each time (the stages' own lists change at the next render). `cuts`: history
        index -> the text its observation shows instead, since an overflow recovery cut it."""
        history = self.with_cuts(history, cuts)
        messages, changed = self.seen, self._changed(history if isinstance(history, list) else list(history))
        for stage in self.stages:
            messages, changed = stage(messages, changed, folds)
        return list(messages)

    def with_cuts(self, history: Sequence[Message], cuts: Mapping[int, str] | None) -> Sequence[Message]:
        """The history with the overflow recoveries' cuts in place (history index -> the text shown instead)."""
        if not cuts:
            return history
        out = list(history)
        for i, text in cuts.items():
            if i < len(out):
                kept = self.cut.get(i)
                if kept is None or kept.text != text:
                    kept = self.cut[i] = out[i].model_copy(update={"text": text})
                out[i] = kept
        return out

    def _changed(self, history: list[Message]) -> int:
        """Where `history` first differs from the last one rendered; `seen` becomes a copy of it. The
        usual case, the same list with messages appended, costs the new messages and one pass that
        compares identities at C speed."""
        seen, n = self.seen, len(self.seen)
        seen.extend(history[n:])
        if len(seen) == len(history) and seen == history:
            return n
        first = shared_prefix(seen, history)
        seen[first:] = history[first:]
        return first

    def tokens(self, prompt: list[Message]) -> int:
        """The prompt's tokens with the tool schemas; only messages that differ from the last prompt counted are counted."""
        counter = self._counter()
        same = shared_prefix(self.counted, prompt)
        marks = self.marks
        del marks[same + 1 :]
        for m in prompt[same:]:
            marks.append(marks[-1] + counter.count(m))
        self.counted = prompt  # prompts are not changed once made
        return marks[-1] + (len(counter.text_ids(self.tools_text)) if self.tools_text else 0)

    def compact_if_due(
        self,
        history: Sequence[Message],
        folds: Sequence[Fold],
        step: int,
        summariser: Summariser,
        tools: Sequence = (),
        cuts: Mapping[int, str] | None = None,
        memory: Callable[[], str | None] | None = None,
    ) -> CompactionResult | None:
        """After `step`: fold old steps into the working memory when the next prompt reaches the policy's
        threshold (or `every_steps` passed since the last fold). None when not due; the caller keeps the fold.
        `memory`: the agent's memory as of now, which a fold made now keeps (memory.notes.run_note)."""
        if self.compact is None:
            return None
        history = self.with_cuts(history, cuts)
        prompt = self.render(history, folds)
        last = folds[-1].at_step if folds else 0
        trigger = due(self.compact, self.tokens(prompt), step, last, self.window)
        if trigger is None:
            return None
        counter = self._counter()
        note = memory() if memory is not None else None
        return compact(history, folds, self.compact, prompt, counter, summariser, trigger, tools, self.window, note)

    def _counter(self) -> TokenCounter:
        if self.counter is None:
            raise ValueError("Counting and compacting need a token counter: Renderer(steps, counter, tools_text).")
        return self.counter


def render(history: Sequence[Message], steps: Sequence[ContextStep], folds: Sequence[Fold] = ()) -> list[Message]:
    return Renderer(steps).render(history, folds)


def compact_step(steps: Sequence[ContextStep]) -> Compact | None:
    return next((s for s in steps if isinstance(s, Compact)), None)
