"""A run's journal folded into steps: the one reading of events that resume, the summary,
rerender, reports and chess metrics share.

Plain data, built in one pass. `history` is the conversation the loop worked on, rebuilt
from `message`, `model_replied` and `tool_observed` events in journal order (`seqs` holds
the seq of the event each message came from); each step holds the events the journal has
for it and says where its reply's prompt history ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from core.events import (
    ApprovalGiven,
    Compacted,
    ContextOverflowed,
    Event,
    Forked,
    InnerIntent,
    InnerObserved,
    InputRequested,
    MemoryWritten,
    MessageAdded,
    ModelFailed,
    ModelReplied,
    ProgramFiles,
    ResourceUpdated,
    RunResumed,
    RunStopped,
    SamplingReplied,
    SandboxOpened,
    SummaryReplied,
    TaskCreated,
    ToolIntent,
    ToolObserved,
)
from core.memory_types import Fold
from core.types import Message, ModelReply, Observation, ToolCall, Usage


@dataclass
class Step:
    n: int
    replied: ModelReplied | None = None  # None: the model call failed (see `failures`), or the step holds only a stop
    history_at: int = 0  # the history this step's reply answered is `history[:history_at]`
    observed: list[ToolObserved] = field(default_factory=list)
    intents: list[ToolIntent] = field(default_factory=list)
    inner: list[InnerObserved] = field(default_factory=list)  # the calls run_code programs made, in order
    inner_intents: list[InnerIntent] = field(default_factory=list)
    programs: list[ProgramFiles] = field(default_factory=list)  # the files each program's first run found
    failures: list[ModelFailed] = field(default_factory=list)
    compactions: list[Compacted] = field(default_factory=list)  # made after this step: the next prompt is compacted
    overflows: list[ContextOverflowed] = field(default_factory=list)  # recoveries before this step's model call
    summaries: list[SummaryReplied] = field(default_factory=list)  # the summariser's calls of this step's compaction
    notes: list[Message] = field(default_factory=list)  # harness messages added in this step (the no-tool nudge)
    asked: list[InputRequested] = field(default_factory=list)  # questions a tool asked that waited for a person
    updates: list[ResourceUpdated] = field(default_factory=list)  # placed resources that changed before this step
    samplings: list[SamplingReplied] = field(default_factory=list)  # the run's model answering MCP servers' requests
    tasks: list[TaskCreated] = field(default_factory=list)  # calls whose work went on as an MCP server's task
    first_ts: float | None = None
    last_ts: float | None = None
    last_seq: int = 0  # of this step's newest event (a person's decisions, resumes and stops left out)

    @property
    def reply(self) -> ModelReply | None:
        return self.replied.reply if self.replied is not None else None

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return self.replied.reply.message.tool_calls if self.replied is not None else ()

    @property
    def usage(self) -> Usage:
        return self.replied.reply.usage if self.replied is not None else Usage()

    @property
    def model_calls(self) -> list[ModelFailed | ModelReplied | SummaryReplied | SamplingReplied]:
        """Every model call the step made, each with its `cost_usd`: failed attempts, the reply, the summariser's,
        and those made for its tool calls' MCP servers (sampling)."""
        replied = [self.replied] if self.replied is not None else []
        return [*self.failures, *replied, *self.summaries, *self.samplings]

    @property
    def sampling_usage(self) -> Usage:
        usage = Usage()
        for s in self.samplings:
            usage = usage + (s.reply.usage if s.reply is not None else Usage())
        return usage

    @property
    def observations(self) -> list[Observation]:
        return [o.observation for o in self.observed]

    @property
    def prompt_chars(self) -> int:
        return self.replied.prompt_chars if self.replied is not None else 0

    @property
    def prompt_messages(self) -> int:
        return self.replied.prompt_messages if self.replied is not None else 0

    @property
    def counted_tokens(self) -> int | None:
        """The harness's own count of the prompt, where the journal has it."""
        return self.replied.counted_tokens if self.replied is not None else None

    @property
    def prefix_reused(self) -> int | None:
        """Of `counted_tokens`, the longest prefix shared with an earlier request of the run."""
        return self.replied.prefix_reused if self.replied is not None else None


@dataclass
class Folded:
    opening: list[Message]  # the system prompt and task, before the first step
    steps: list[Step]  # in step order
    history: list[Message]
    seqs: list[int]  # the seq of the event each history message came from
    stop: RunStopped | None  # the last stop; a resumed run may have stopped before
    started_ts: float | None  # the first event's time
    worked_ts: float | None = None  # the last event's time, a person's decisions and resumes left out
    last_step: int = 0  # the highest step any event names: a step below it is finished
    # The summariser's calls since the last compaction: a compaction the crash cut short, when any.
    pending_summaries: list[SummaryReplied] = field(default_factory=list)
    branches: list[Forked] = field(default_factory=list)  # a fork's branch points, oldest first (a fork of a fork: two)

    @property
    def branch(self) -> Forked | None:
        """The newest branch point: every event before it is inherited (None: not a fork, or not branched yet)."""
        return self.branches[-1] if self.branches else None

    @property
    def replies(self) -> list[Step]:
        """The steps whose model call was answered, in order."""
        return [s for s in self.steps if s.replied is not None]

    @property
    def model_replies(self) -> int:
        """The replies the run's model has given: the agent's, the summariser's and those sampled for MCP servers
        (a scripted model hands out one list of replies to all, in the order asked, so a resumed one continues
        after this many). A call that raised gave none, though a compaction counts it as an attempt."""
        others = [r.reply for s in self.steps for r in s.summaries] + [r.reply for s in self.steps for r in s.samplings]
        return len(self.replies) + sum(reply is not None for reply in others)

    @property
    def folds(self) -> list[Fold]:
        """Every fold (a compaction's, an overflow recovery's), in journal order."""
        return [e.fold for e in self.reshaping() if e.fold is not None]

    @property
    def cuts(self) -> dict[int, str]:
        """Every observation an overflow recovery cut: history index -> the text shown from then on."""
        return {c.index: c.text for e in self.reshaping() if isinstance(e, ContextOverflowed) for c in e.cuts}

    def folds_before(self, step: Step) -> list[Fold]:
        """The folds the run had made when it rendered `step`'s prompt."""
        return [e.fold for e in self.reshaping(step) if e.fold is not None]

    def cuts_before(self, step: Step) -> dict[int, str]:
        """The cuts in place when the run rendered `step`'s prompt."""
        return {c.index: c.text for e in self.reshaping(step) if isinstance(e, ContextOverflowed) for c in e.cuts}

    def reshaping(self, before: Step | None = None) -> list[Compacted | ContextOverflowed]:
        """The events that change later prompts, in journal order; with `before`, those its prompt had seen
        (a step's overflow recoveries come before its reply, its compaction after)."""
        end = before.replied.seq if before is not None and before.replied is not None else None
        events: list[Compacted | ContextOverflowed] = []
        for s in self.steps:
            events += s.overflows
            events += s.compactions
        if before is not None:
            events = [e for e in events if (e.seq < end if end is not None else e.step < before.n)]
        # A branch that reshaped the context leaves the inherited folds and cuts behind for every later prompt.
        since = max((b.seq for b in self.branches if b.reshaped and _passed(b, before, end)), default=0)
        return sorted((e for e in events if e.seq > since), key=lambda e: e.seq)


def _passed(branch: Forked, before: Step | None, end: int | None) -> bool:
    """Whether the prompt of `before` (None: the next one) was rendered after `branch`."""
    if before is None:
        return True
    return branch.seq < end if end is not None else branch.step < before.n


def fold(events: Iterable[Event]) -> Folded:
    out = Folded([], [], [], [], None, None)
    steps: dict[int, Step] = {}

    def at(e: Event, work: bool = True) -> Step:
        """`e`'s step; `work`: the step's own doing (a stop is not: a step that ended before it is not open)."""
        step = steps.setdefault(e.step, Step(e.step))
        if e.ts:
            step.first_ts = e.ts if step.first_ts is None else min(step.first_ts, e.ts)
            step.last_ts = e.ts if step.last_ts is None else max(step.last_ts, e.ts)
        if work:
            step.last_seq = max(step.last_seq, e.seq)
        return step

    def add(message: Message, seq: int) -> None:
        out.history.append(message)
        out.seqs.append(seq)

    for e in events:
        if out.started_ts is None and e.ts:
            out.started_ts = e.ts
        if not isinstance(e, (ApprovalGiven, RunResumed)):
            out.worked_ts = e.ts
        out.last_step = max(out.last_step, e.step)
        if isinstance(e, MessageAdded):
            add(e.message, e.seq)
            if e.step == 0:
                out.opening.append(e.message)
            else:
                at(e).notes.append(e.message)
        elif isinstance(e, ModelReplied):
            step = at(e)
            step.replied, step.history_at = e, len(out.history)
            add(e.reply.message, e.seq)
        elif isinstance(e, ToolObserved):
            at(e).observed.append(e)
            add(e.observation.to_message(), e.seq)
        elif isinstance(e, ToolIntent):
            at(e).intents.append(e)
        elif isinstance(e, InnerObserved):
            at(e).inner.append(e)
        elif isinstance(e, InnerIntent):
            at(e).inner_intents.append(e)
        elif isinstance(e, ProgramFiles):
            at(e).programs.append(e)
        elif isinstance(e, InputRequested):
            at(e).asked.append(e)
        elif isinstance(e, ResourceUpdated):
            at(e).updates.append(e)
            add(e.message, e.seq)
        elif isinstance(e, ModelFailed):
            at(e).failures.append(e)
        elif isinstance(e, SummaryReplied):
            at(e).summaries.append(e)
            out.pending_summaries.append(e)
        elif isinstance(e, Compacted):
            at(e).compactions.append(e)
            out.pending_summaries = []
        elif isinstance(e, ContextOverflowed):
            at(e).overflows.append(e)
            out.pending_summaries = []
        elif isinstance(e, SamplingReplied):
            at(e).samplings.append(e)
        elif isinstance(e, TaskCreated):
            at(e).tasks.append(e)
        elif isinstance(e, MemoryWritten):
            at(e)
        elif isinstance(e, Forked):
            out.branches.append(e)
            out.pending_summaries = []
        elif isinstance(e, RunStopped):
            out.stop = e
            if e.step in steps:
                at(e, work=False)
    out.steps = [steps[n] for n in sorted(steps)]
    return out


# Written when a person decided or a process took the run up (its sandbox opened again, a resume, a fork's branch):
# the time before each is a pause, not work, however long the run waited. The run's first sandbox is not taken up
# again: the time before it is its container starting.
PAUSE_ENDS = (ApprovalGiven, SandboxOpened, RunResumed, Forked)


def worked_s(events: Iterable[Event], after_seq: int = 0) -> float:
    """Seconds the run worked after event `after_seq` (0: from its first event): the time between consecutive
    events, less the pauses."""
    total, previous, opened = 0.0, None, False
    for e in events:
        pause = isinstance(e, PAUSE_ENDS) and (opened or not isinstance(e, SandboxOpened))
        if previous is not None and previous.seq >= after_seq and previous.ts and not pause:
            total += max(0.0, e.ts - previous.ts)
        opened = opened or isinstance(e, SandboxOpened)
        previous = e
    return total
