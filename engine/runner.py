"""Turn a scheduled batch into model inputs, run the forward pass, return logits.

The flattened batch holds every scheduled token; rows that end a sequence's
uncomputed span (the last prompt token, or the token just sampled) are the rows
whose logits we compute, so prefill never pays the vocabulary projection per token.
"""

from dataclasses import dataclass

import torch

from engine.attention import AttentionMetadata, PrefillSlice, build_decode_mask, lower_right_causal_mask
from engine.kv_cache import KVCache
from engine.model import Model
from engine.sequence import Sequence


@dataclass
class StepInputs:
    input_ids: torch.Tensor
    positions: torch.Tensor
    meta: AttentionMetadata
    logits_rows: torch.Tensor
    sample_seqs: list[Sequence]  # the sequences whose logits rows are computed, in row order


def prepare(items: list[tuple[Sequence, int]], block_size: int, device) -> StepInputs:
    """items: (sequence, tokens to compute), single-token ones first (the scheduler orders them)."""
    ids: list[int] = []
    positions: list[torch.Tensor] = []
    slots: list[torch.Tensor] = []
    logits_rows: list[int] = []
    sample_seqs: list[Sequence] = []
    decode_tables: list[list[int]] = []
    decode_lens: list[int] = []
    prefills: list[PrefillSlice] = []
    row = 0
    for seq, n in items:
        start, end = seq.num_computed, seq.num_computed + n
        table = seq.block_table
        ids.extend(seq.token_ids[start:end])
        if n == 1:
            positions.append(torch.tensor([start]))
            slots.append(torch.tensor([table[start // block_size] * block_size + start % block_size]))
            decode_tables.append(table)
            decode_lens.append(end)
        else:
            pos = torch.arange(start, end)
            bt = torch.tensor(table, dtype=torch.long)
            positions.append(pos)
            slots.append(bt[pos // block_size] * block_size + pos % block_size)
            mask = lower_right_causal_mask(n, end) if start > 0 else None
            prefills.append(PrefillSlice(row, n, end, bt.to(device), mask if mask is None else mask.to(device)))
        row += n
        if end == len(seq.token_ids):
            logits_rows.append(row - 1)
            sample_seqs.append(seq)
    meta = AttentionMetadata(torch.cat(slots).to(device), num_decode=len(decode_tables), prefills=tuple(prefills))
    if decode_tables:
        width = max(len(t) for t in decode_tables)
        padded = torch.tensor([t + [0] * (width - len(t)) for t in decode_tables], dtype=torch.long)
        meta.decode_block_tables = padded.to(device)
        meta.decode_mask = build_decode_mask(torch.tensor(decode_lens), width * block_size).to(device)
    return StepInputs(
        torch.tensor(ids, dtype=torch.long, device=device),
        torch.cat(positions).to(device),
        meta,
        torch.tensor(logits_rows, dtype=torch.long, device=device),
        sample_seqs,
    )


def run(model: Model, cache: KVCache, inputs: StepInputs, all_logits: bool = False) -> torch.Tensor:
    with torch.inference_mode():
        rows = None if all_logits else inputs.logits_rows
        return model.forward(inputs.input_ids, inputs.positions, inputs.meta, (cache.k, cache.v), rows)
