"""One request's state as it moves through the engine."""

import enum
from dataclasses import dataclass, field

import torch

from engine.output import TextOutput
from engine.radix import Node
from engine.sampler import SamplingParams


@dataclass(frozen=True)
class ReturnHint:
    """A client saying it will come back: an agent whose reply starts a tool call sends its run's
    session key and the tool's timeout. After the request, the prefix cache keeps what the session
    computed ahead of LRU for up to `within_s` seconds, or until its next request arrives (radix.py)."""

    session: str
    within_s: float


class Status(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(eq=False)
class Sequence:
    request_id: str
    token_ids: list[int]  # prompt followed by generated tokens
    prompt_len: int
    params: SamplingParams
    arrival: int  # admission order: preemption picks the newest (largest)
    generator: torch.Generator
    status: Status = Status.WAITING
    num_computed: int = 0  # leading tokens whose K/V are in the cache
    prefix_nodes: list[Node] = field(default_factory=list)  # locked prefix-cache path (borrowed blocks)
    owned_blocks: list[int] = field(default_factory=list)  # blocks this sequence allocated
    cached_tokens: int | None = None  # prefix-cache hit at first admission (what usage reports)
    num_preemptions: int = 0
    finish_reason: str | None = None
    error: Exception | None = None
    output: TextOutput | None = None  # the completion's text; None when the model has no tokenizer
    hint: ReturnHint | None = None
    max_tokens: int = 0  # params.max_tokens clipped to the context window
    arrival_time: float = 0.0
    first_token_time: float | None = None
    finish_time: float | None = None

    @property
    def block_table(self) -> list[int]:
        return [n.block for n in self.prefix_nodes] + self.owned_blocks

    @property
    def num_blocks(self) -> int:
        return len(self.prefix_nodes) + len(self.owned_blocks)

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.prompt_len :]

    @property
    def num_output(self) -> int:
        return len(self.token_ids) - self.prompt_len

    @property
    def text(self) -> str:
        return self.output.text if self.output is not None else ""

    @property
    def num_uncomputed(self) -> int:
        return len(self.token_ids) - self.num_computed
