"""One scheduled step flattened into plain lists: what both runners (CPU and CUDA) build
their tensors from.

The flattened batch holds every scheduled token, decode rows (single-token queries)
first, as the scheduler orders them. Rows that end a sequence's uncomputed span (the
last prompt token, or the token just sampled) are the rows whose logits are computed,
so prefill never pays the vocabulary projection per token; a single-token chunk of a
longer prompt (the step's budget ran out) is a decode row that gets no logits.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from engine.sequence import Sequence


@dataclass
class PrefillSpan:
    start: int  # first row of the span in the flattened batch
    q_len: int  # tokens computed this step
    kv_len: int  # tokens in the cache once they are
    block_table: list[int]


@dataclass
class Batch:
    input_ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)  # where each row's K/V is stored in the paged cache
    decode_tables: list[list[int]] = field(default_factory=list)  # block table of each decode row
    decode_lens: list[int] = field(default_factory=list)  # context length of each decode row
    prefills: list[PrefillSpan] = field(default_factory=list)
    logits_rows: list[int] = field(default_factory=list)
    sample_seqs: list[Sequence] = field(default_factory=list)  # whose logits rows are computed, in row order

    @property
    def num_decode(self) -> int:
        return len(self.decode_tables)


@dataclass
class Launched:
    """A greedy decode step's tokens, one per row: on the device at once (the next step can
    take its input ids from them), on the host when `read` returns (it waits for the step)."""

    ids: torch.Tensor
    read: Callable[[], list[int]]


def slots(table: list[int], start: int, end: int, block_size: int) -> list[int]:
    """The cache slots of positions start..end - 1: a run of consecutive slots per block (a
    prompt chunk's thousands of rows cost a few hundred list extensions, not a loop per row)."""
    out: list[int] = []
    for p in range(start - start % block_size, end, block_size):
        first = table[p // block_size] * block_size - p
        out += range(first + max(start, p), first + min(end, p + block_size))
    return out


def flatten(items: list[tuple[Sequence, int]], block_size: int) -> Batch:
    """items: (sequence, tokens to compute), single-token ones first."""
    b = Batch()
    for seq, n in items:
        start, end = seq.num_computed, seq.num_computed + n
        table = seq.block_table
        row = len(b.input_ids)
        b.input_ids += seq.token_ids[start:end]
        b.positions += range(start, end)
        b.slots += slots(table, start, end, block_size)
        if n == 1:
            b.decode_tables.append(table)
            b.decode_lens.append(end)
        else:
            b.prefills.append(PrefillSpan(row, n, end, table))
        if end == len(seq.token_ids):
            b.logits_rows.append(row + n - 1)
            b.sample_seqs.append(seq)
    return b


def flatten_next(seqs: list[Sequence], block_size: int) -> Batch:
    """The decode step after one still running: each sequence's next position, for the token
    that step is sampling. The host does not know those tokens yet; the runner takes them from
    the running step's output on the device (input ids here are placeholders)."""
    b = Batch()
    for row, seq in enumerate(seqs):
        pos = len(seq.token_ids)
        table = seq.block_table
        b.input_ids.append(0)
        b.positions.append(pos)
        b.slots.append(table[pos // block_size] * block_size + pos % block_size)
        b.decode_tables.append(table)
        b.decode_lens.append(pos + 1)
        b.logits_rows.append(row)
        b.sample_seqs.append(seq)
    return b
