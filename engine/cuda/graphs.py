"""CUDA graphs of the decode step for a ladder of batch sizes.

A decode step of a small batch is hundreds of short kernels; replaying a captured
graph launches them all at once, so the step costs what the GPU takes, not what
Python takes to launch. Inputs live in static buffers the graphs were captured
over: a batch of B sequences is copied into the smallest captured size >= B, its
padding rows with slot -1 (nothing stored) and context length 0 (attention writes
zeros), and the first B rows of the output are its logits. The block-table buffer
is as wide as the longest context the engine allows, so the decode kernel's grid
never changes after capture.
"""

import bisect
import gc

import torch

from engine.cuda.forward import CudaAttentionMetadata, forward
from engine.cuda.model import CudaModel
from engine.kv_cache import KVCache


def batch_ladder(max_batch: int) -> list[int]:
    sizes = [s for s in (1, 2, 4, 8) if s < max_batch] + list(range(16, max_batch, 16))
    return sorted(set(sizes + [max_batch]))


class DecodeGraphs:
    def __init__(self, model: CudaModel, kv: KVCache, max_batch: int, table_width: int):
        dev = model.device
        self.model, self.kv = model, kv
        self.sizes = batch_ladder(max_batch)
        self.max_batch = self.sizes[-1]
        # Rows: input ids, positions, slots, context lengths (int64, one host-to-device copy).
        self.buf = torch.zeros((4, self.max_batch), dtype=torch.long, device=dev)
        self.tables = torch.zeros((self.max_batch, table_width), dtype=torch.int32, device=dev)
        # Pinned twins: the step's inputs go up in two asynchronous copies, with no staging on the way.
        # Two sets, used in turn: a step running ahead (engine/step.py) is written while the step before
        # it may not have been copied up yet; the set before that one has been, since its tokens
        # were read. Written from the scheduler's lists through numpy views: no tensor on the way.
        self.host = [
            (
                torch.zeros((4, self.max_batch), dtype=torch.long, pin_memory=True),
                torch.zeros((self.max_batch, table_width), dtype=torch.int32, pin_memory=True),
            )
            for _ in range(2)
        ]
        self.host_np = [(b.numpy(), t.numpy()) for b, t in self.host]
        self.turn = 0
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, torch.Tensor] = {}
        # Each row's greedy token, made inside the graph (at batch 1 in the output projection's
        # own kernel): a greedy step needs no kernel after the replay. A sampled step leaves it unread.
        self.ids = {size: torch.zeros(size, dtype=torch.long, device=dev) for size in self.sizes}
        self._capture()

    def _forward(self, size: int) -> torch.Tensor:
        ids, pos, slots, lens = (self.buf[i, :size] for i in range(4))
        meta = CudaAttentionMetadata(slots, num_decode=size, decode_tables=self.tables[:size], decode_lens=lens)
        return forward(self.model, ids, pos, meta, self.kv.k, self.kv.v, ids=self.ids[size])

    def _capture(self) -> None:
        self.buf[2].fill_(-1)  # capture over padding rows: nothing is stored in the cache
        pool = None
        # A garbage collection during a capture can free an earlier engine's pinned buffers and
        # events, whose CUDA calls (event queries) are not allowed then and invalidate the capture:
        # collect before, and not during.
        gc.collect()
        collecting = gc.isenabled()
        gc.disable()
        try:
            with torch.inference_mode():
                for size in reversed(self.sizes):  # largest first: the others reuse its memory pool
                    self._forward(size)  # warm up: Triton compiles, cuBLAS picks its kernels
                    torch.cuda.synchronize()
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool):
                        self.outputs[size] = self._forward(size)
                    pool = graph.pool() if pool is None else pool
                    self.graphs[size] = graph
        finally:
            if collecting:
                gc.enable()
        torch.cuda.synchronize()

    def run(
        self, rows: list[list[int]], tables: list[list[int]], ids_from: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The B rows' logits and greedy tokens. rows: the B ids, positions, slots and lengths;
        tables: each sequence's block table; ids_from: B input ids on the GPU, taking the place
        of the first row (the tokens of the step before, not yet on the host). Entries past a
        table's end keep older values: the kernels never read them."""
        b = len(rows[0])
        size = self.sizes[bisect.bisect_left(self.sizes, b)]
        (host_buf, host_tables), (buf, host_tables_np) = self.host[self.turn], self.host_np[self.turn]
        self.turn ^= 1
        for i, row in enumerate(rows):
            buf[i, :b] = row
        if size > b:  # padding rows: token 0 at position 0, no slot, no context
            buf[:, b:size] = 0
            buf[2, b:size] = -1
        for i, table in enumerate(tables):
            host_tables_np[i, : len(table)] = table
        # Whole rows, so that both copies are one contiguous asynchronous copy each: a strided slice
        # would go through a pageable host copy and a second kernel on every step.
        self.buf.copy_(host_buf, non_blocking=True)
        self.tables[:b].copy_(host_tables[:b], non_blocking=True)
        if ids_from is not None:
            self.buf[0, :b].copy_(ids_from)
        self.graphs[size].replay()
        return self.outputs[size][:b], self.ids[size][:b]
