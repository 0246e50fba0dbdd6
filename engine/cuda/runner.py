"""The CUDA runner: a flattened batch (engine/batch.py, shared with the CPU runner) into
CUDA inputs, then logits.

Same rows as the CPU runner (rows that end a sequence's uncomputed span get logits;
`sample_seqs` in row order), different metadata: block tables and lengths for the
Triton attention kernels instead of masks and gathers. A batch made only of
single-token queries, small enough for a captured graph, replays a CUDA graph;
anything else (prefill chunks, mixed batches, logits of every row) runs eagerly.
"""

from dataclasses import dataclass

import torch

from engine.batch import flatten
from engine.cuda.forward import CudaAttentionMetadata, forward
from engine.cuda.graphs import DecodeGraphs
from engine.cuda.model import CudaModel
from engine.kv_cache import KVCache
from engine.sequence import Sequence


@dataclass
class CudaStepInputs:
    rows: list[list[int]]  # input ids, positions, slots, context lengths: one list each, T long
    decode_tables: list[list[int]]
    prefills: list[tuple[int, int, int, list[int]]]  # (first row, q_len, kv_len, block table)
    logits_rows: list[int]
    sample_seqs: list[Sequence]


def _pad(tables: list[list[int]]) -> torch.Tensor:
    width = max(len(t) for t in tables)
    return torch.tensor([t + [0] * (width - len(t)) for t in tables], dtype=torch.int32)


class CudaRunner:
    def __init__(
        self,
        model: CudaModel,
        kv: KVCache,
        block_size: int,
        max_model_len: int,
        max_batch: int,
        use_graphs: bool = True,
    ):
        self.model, self.kv, self.block_size = model, kv, block_size
        width = -(-max_model_len // block_size)
        self.graphs = DecodeGraphs(model, kv, max_batch, width) if use_graphs else None

    def prepare(self, items: list[tuple[Sequence, int]]) -> CudaStepInputs:
        b = flatten(items, self.block_size)
        # The last list is each row's context length: the kernels read it for decode rows, the graphs for all.
        lens = b.decode_lens + [p.kv_len for p in b.prefills for _ in range(p.q_len)]
        prefills = [(p.start, p.q_len, p.kv_len, p.block_table) for p in b.prefills]
        return CudaStepInputs(
            [b.input_ids, b.positions, b.slots, lens], b.decode_tables, prefills, b.logits_rows, b.sample_seqs
        )

    def run(self, inputs: CudaStepInputs, all_logits: bool = False) -> torch.Tensor:
        with torch.inference_mode():
            nd = len(inputs.decode_tables)
            if self.graphs is not None and not inputs.prefills and nd <= self.graphs.max_batch:
                logits = self.graphs.run(inputs.rows, inputs.decode_tables)
                if all_logits or len(inputs.logits_rows) == nd:
                    return logits
                return logits[torch.tensor(inputs.logits_rows, device=logits.device)]
            dev = self.model.device
            host = torch.tensor(inputs.rows, dtype=torch.long).to(dev, non_blocking=True)
            meta = CudaAttentionMetadata(host[2], num_decode=nd)
            if nd:
                meta.decode_tables = _pad(inputs.decode_tables).to(dev, non_blocking=True)
                meta.decode_lens = host[3, :nd]
            if inputs.prefills:
                starts, lens, kv_lens, tables = zip(*inputs.prefills)
                meta.prefill_tables = _pad(list(tables)).to(dev, non_blocking=True)
                meta.prefill_q_start, meta.prefill_q_len, meta.prefill_kv_len = (
                    torch.tensor(v, dtype=torch.int32).to(dev, non_blocking=True) for v in (starts, lens, kv_lens)
                )
                meta.max_prefill_len = max(lens)
            rows = None if all_logits else torch.tensor(inputs.logits_rows, dtype=torch.long).to(dev, non_blocking=True)
            return forward(self.model, host[0], host[1], meta, self.kv.k, self.kv.v, rows)
