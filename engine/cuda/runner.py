"""The CUDA runner: a flattened batch (engine/batch.py, shared with the CPU runner) into
CUDA inputs, then logits.

Same rows as the CPU runner (rows that end a sequence's uncomputed span get logits;
`sample_seqs` in row order), different metadata: block tables and lengths for the
Triton attention kernels instead of masks and gathers. A batch made only of
single-token queries, small enough for a captured graph, replays a CUDA graph;
anything else (prefill chunks, mixed batches, logits of every row) runs eagerly.
"""

from dataclasses import dataclass

import numpy as np
import torch

from engine.batch import Batch, Launched
from engine.cuda import flash, gemm
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
        ahead: bool = True,
        kernels: str = "auto",
        max_rows: int = 8192,
    ):
        self.model, self.kv, self.block_size = model, kv, block_size
        # Before the graphs are captured: they hold the kernels chosen.
        self.kernels = gemm.choose(model.projections(), max_rows) if kernels == "auto" else "cuBLAS (asked for)"
        self.flash, attention = (
            flash.choose(kv.k[0], kv.v[0], model.config.num_heads, model.scale, max_rows)
            if kernels == "auto"
            else (False, "Triton (asked for)")
        )
        self.kernels += f"; prefill attention: {attention}"
        width = -(-max_model_len // block_size)
        self.graphs = DecodeGraphs(model, kv, max_batch, width) if use_graphs else None
        # The most sequences a greedy decode step runs ahead with (engine/step.py): what a graph holds.
        self.ahead_batch = self.graphs.max_batch if self.graphs is not None and ahead else 0
        # A launched step's tokens come to the host here, in two sets used in turn: the engine
        # reads a step's tokens after launching the next one, never after the one after that.
        self.host_ids = [torch.zeros(max_batch, dtype=torch.long, pin_memory=True) for _ in range(2)]
        self.copied = [torch.cuda.Event() for _ in range(2)]
        self.turn = 0

    def prepare(self, b: Batch) -> CudaStepInputs:
        # The last list is each row's context length: the kernels read it for decode rows, the graphs for all.
        lens = list(b.decode_lens)
        for p in b.prefills:
            lens += [p.kv_len] * p.q_len
        prefills = [(p.start, p.q_len, p.kv_len, p.block_table) for p in b.prefills]
        return CudaStepInputs(
            [b.input_ids, b.positions, b.slots, lens], b.decode_tables, prefills, b.logits_rows, b.sample_seqs
        )

    def launch(self, inputs: CudaStepInputs, ids_from: torch.Tensor | None = None) -> Launched:
        """Replay a greedy decode step and return at once: its tokens stay on the GPU, where the
        next step's graph can take its input ids from them (`ids_from`), and come to the host
        in an asynchronous copy that `read` waits for. Only batches the graphs hold."""
        graphs = self.graphs
        assert graphs is not None  # ahead_batch is 0 without graphs
        host, copied = self.host_ids[self.turn], self.copied[self.turn]
        self.turn ^= 1
        with torch.inference_mode():
            _, ids = graphs.run(inputs.rows, inputs.decode_tables, ids_from)
            host = host[: len(ids)]
            host.copy_(ids, non_blocking=True)
            copied.record()

        def read() -> list[int]:
            copied.synchronize()
            return host.tolist()

        return Launched(ids, read)

    def run(self, inputs: CudaStepInputs, all_logits: bool = False) -> torch.Tensor:
        with torch.inference_mode():
            nd = len(inputs.decode_tables)
            if self.graphs is not None and not inputs.prefills and nd <= self.graphs.max_batch:
                logits, _ = self.graphs.run(inputs.rows, inputs.decode_tables)
                if all_logits or len(inputs.logits_rows) == nd:
                    return logits
                return logits[torch.tensor(inputs.logits_rows, device=logits.device)]
            dev = self.model.device
            # numpy turns a prefill's lists of thousands of ints into one array a few times faster than torch
            host = torch.from_numpy(np.array(inputs.rows, dtype=np.int64)).to(dev, non_blocking=True)
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
                if self.flash:
                    cu = [s - nd for s in starts] + [starts[-1] + lens[-1] - nd]
                    meta.prefill_cu_seqlens = torch.tensor(cu, dtype=torch.int32).to(dev, non_blocking=True)
                    meta.prefill_fresh = lens == kv_lens  # each chunk a whole prompt from position 0
            rows = None if all_logits else torch.tensor(inputs.logits_rows, dtype=torch.long).to(dev, non_blocking=True)
            return forward(self.model, host[0], host[1], meta, self.kv.k, self.kv.v, rows)
