"""Long, costly scripted runs: N steps whose tool outputs range from a line to ~50,000 tokens, then `submit`.

The task's setup writes files of many sizes with coreutils (a log of numbered lines, a table, a
small config); the script reads them back in slices (`sed -n`, `head`, `read_file`) or prints
numbers (`seq`), between small calls of `grep`, `find` and `wc`, so a run's observations vary the way a real agent's do: mostly small, now and then
one as large as the model's whole window. Everything follows from the seed; the outputs are
deterministic, so a replay or a resumed run sees the very same text.

The overflow tests and benchmarks/bench_overflow.py use it:

    made = costly_run(seed=3, steps=150)
    start(RunSpec(made.task, ScriptedModel(made.replies), policy(32000), out))

Under `overflow.summariser = "model"` the run's model also writes each emergency fold's memory, and
where those requests fall depends on the window: `SummarisingModel` answers them as they come, and
its `replies` are then the one list a resumed ScriptedModel continues in.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from core.context_policy import TruncationPolicy
from core.memory_types import WorkingMemory
from core.policy import HarnessPolicy, ModelParams, OverflowPolicy, StopPolicy
from core.types import Message, ModelReply
from tools.base import Tool

LOG = "service.log"
TABLE = "table.csv"
LOG_LINES = 2500  # about 60,000 tokens: its slices reach the largest output asked for
TABLE_ROWS = 2000
# Measured with cl100k (the counter of a scripted run): the planned sizes hold within a third.
TOKENS_PER_LOG_LINE = 24
TOKENS_PER_TABLE_ROW = 16  # read_file numbers each line
TOKENS_PER_SEQ_NUMBER = 2.5  # "123\n" is two tokens, "12345\n" three
SMALL = 200  # outputs up to this many tokens come from a small call of some tool

MEMORY = WorkingMemory(goal="read the log and the table in slices", plan=["note what each slice shows"])
# (share of steps, smallest and largest output in tokens): mostly small, a few as large as `largest`.
SIZES = [(0.55, 5, SMALL), (0.25, SMALL, 3000), (0.14, 3000, 15000), (0.06, 15000, None)]


@dataclass(frozen=True)
class CostlyRun:
    task: Task
    replies: list[ScriptedReply]
    sizes: list[int]  # each step's planned output, in tokens (approximate: the tokenizer decides)


def costly_run(seed: int = 0, steps: int = 150, largest: int = 50_000) -> CostlyRun:
    """`steps` replies, the last a `submit`; outputs up to about `largest` tokens."""
    rng = random.Random(seed)
    replies, sizes = [], []
    for i in range(1, steps):
        tokens = _size(rng, largest)
        replies.append(_read(rng, i, tokens))
        sizes.append(tokens)
    replies.append(_call("submit", answer=f"read {steps - 1} outputs"))
    return CostlyRun(_task(), replies, sizes)


def policy(
    window: int,
    on_overflow: Literal["compact", "truncate", "stop"] = "compact",
    summariser: Literal["model", "extractive"] = "extractive",
    steps: int = 150,
) -> HarnessPolicy:
    """A window of `window` tokens and outputs cut only by the overflow recovery: the default truncation
    (about 10,000 characters) would otherwise keep every output far below the window."""
    return HarnessPolicy(
        name=f"costly-{window}-{on_overflow}",
        model=ModelParams(context_window=window),
        stop=StopPolicy(max_steps=steps + 1),
        overflow=OverflowPolicy(on_overflow=on_overflow, summariser=summariser),
        truncation=TruncationPolicy(head_chars=1_000_000, tail_chars=1_000_000),
    )


class SummarisingModel(ScriptedModel):
    """The agent's replies in order, and `memory` for every summary request (the summariser asks for a
    reply that follows the working memory's schema). `replies` grows with what each call got."""

    def __init__(self, agent: Sequence[ScriptedReply], memory: WorkingMemory = MEMORY):
        super().__init__([])
        self.agent = deque(agent)
        self.memory = ScriptedReply(text=memory.model_dump_json())

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        if params.reply_schema is not None:
            self.replies.append(self.memory)
        elif self.agent:
            self.replies.append(self.agent.popleft())
        return super().complete(messages, tools, params)


def _task() -> Task:
    return Task(
        id="costly",
        prompt=f"Read through {LOG} and {TABLE} in slices, noting what you find, then submit.",
        files={"config.ini": "[service]\nport = 8080\nworkers = 4\nlog = service.log\n"},
        setup=[
            f'seq -f "%g: GET /api/items answered 200 in 12 ms, cache hit, worker 3 of 4" 1 {LOG_LINES} > {LOG}',
            f'seq -f "%g,alpha,beta,0.5,ok" 1 {TABLE_ROWS} > {TABLE}',
        ],
    )


def _size(rng: random.Random, largest: int) -> int:
    _, low, high = rng.choices(SIZES, weights=[share for share, _, _ in SIZES])[0]
    top = min(high or largest, largest)
    return rng.randint(min(low, top), top)


def _read(rng: random.Random, step: int, tokens: int) -> ScriptedReply:
    """A call whose output is about `tokens` long; each names its step, so no two in a row are the same call."""
    if tokens <= SMALL:
        return rng.choice(
            [
                _call("shell", command=f"echo step {step}; wc -l {LOG} {TABLE}"),
                _call("grep", pattern=f"^{step}:", path=LOG),
                _call("read_file", path="config.ini", start_line=1 + step % 3),
                _call("find", name=f"*.{('log', 'csv', 'ini')[step % 3]}"),
                _call("shell", command=f"echo step {step}; head -n {1 + tokens // TOKENS_PER_LOG_LINE} {LOG}"),
            ]
        )
    lines, rows = round(tokens / TOKENS_PER_LOG_LINE), round(tokens / TOKENS_PER_TABLE_ROW)
    pick = rng.random()
    if lines > LOG_LINES or pick < 0.3:  # numbers alone, as many as asked
        return _call("shell", command=f"echo step {step}; seq 1 {round(tokens / TOKENS_PER_SEQ_NUMBER)}")
    if rows <= TABLE_ROWS and pick < 0.55:
        first = rng.randint(1, TABLE_ROWS - rows + 1)
        return _call("read_file", path=TABLE, start_line=first, end_line=first + rows - 1)
    first = rng.randint(1, LOG_LINES - lines + 1)
    return _call("shell", command=f"echo step {step}; sed -n {first},{first + lines - 1}p {LOG}")


def _call(tool: str, **arguments) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name=tool, arguments=arguments)])
