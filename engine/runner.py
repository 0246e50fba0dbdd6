"""The CPU runner: a flattened batch (engine/batch.py) into model inputs, then logits."""

from dataclasses import dataclass

import torch

from engine.attention import (
    AttentionMetadata,
    PrefillSlice,
    lower_right_causal_mask,
)
from engine.batch import Batch, Launched
from engine.kv_cache import KVCache
from engine.model import Model
from engine.sampler import argmax
from engine.sequence import Sequence


@dataclass
class StepInputs:
    input_ids: torch.Tensor
    positions: torch.Tensor
    meta: AttentionMetadata
    logits_rows: torch.Tensor
    sample_seqs: list[Sequence]  # the sequences whose logits rows are computed, in row order


def to_inputs(b: Batch, device) -> StepInputs:
    prefills = []
    for p in b.prefills:
        # A chunk after the first attends to the cached part too: causal from the lower right.
        mask = lower_right_causal_mask(p.q_len, p.kv_len).to(device) if p.kv_len > p.q_len else None
        prefills.append(
            PrefillSlice(p.start, p.q_len, p.kv_len, torch.tensor(p.block_table, dtype=torch.long, device=device), mask)
        )
    meta = AttentionMetadata(
        torch.tensor(b.slots, dtype=torch.long, device=device), num_decode=b.num_decode, prefills=tuple(prefills)
    )
    if b.decode_tables:
        width = max(len(t) for t in b.decode_tables)
        padded = torch.tensor([t + [0] * (width - len(t)) for t in b.decode_tables], dtype=torch.long)
        meta.decode_block_tables = padded.to(device)
        meta.decode_lens = torch.tensor(b.decode_lens, dtype=torch.int32, device=device)
    return StepInputs(
        torch.tensor(b.input_ids, dtype=torch.long, device=device),
        torch.tensor(b.positions, dtype=torch.long, device=device),
        meta,
        torch.tensor(b.logits_rows, dtype=torch.long, device=device),
        b.sample_seqs,
    )


class CpuRunner:
    def __init__(self, model: Model, kv: KVCache, ahead_batch: int = 0):
        self.model, self.kv = model, kv
        # The most sequences a greedy decode step runs ahead with (engine/step.py); 0: never. Off by
        # default: the CPU computes a step before `launch` returns, so there is nothing to overlap.
        self.ahead_batch = ahead_batch

    def prepare(self, b: Batch) -> StepInputs:
        return to_inputs(b, self.model.device)

    def launch(self, inputs: StepInputs, ids_from: torch.Tensor | None = None) -> Launched:
        """A greedy decode step whose input ids may be the previous step's tokens (`ids_from`)."""
        if ids_from is not None:
            inputs.input_ids = ids_from
        ids = argmax(self.run(inputs))
        return Launched(ids, ids.tolist)

    def run(self, inputs: StepInputs, all_logits: bool = False) -> torch.Tensor:
        with torch.inference_mode():
            rows = None if all_logits else inputs.logits_rows
            return self.model.forward(inputs.input_ids, inputs.positions, inputs.meta, (self.kv.k, self.kv.v), rows)
