"""The paged KV cache: fixed-size blocks preallocated from a memory budget, and the
pool that hands them out.

Every block is owned by exactly one party at a time: the free list, a running
sequence, or a node of the prefix cache (radix.py). Ownership moves, it is never
shared through reference counts; a sequence *borrows* the blocks of prefix-cache
nodes it matched by locking those nodes.
"""

import logging
from dataclasses import dataclass

import torch

from engine.config import EngineConfig, ModelConfig
from engine.errors import EngineError

log = logging.getLogger("engine")


@dataclass
class KVCache:
    k: torch.Tensor  # (layers, num_blocks, block_size, kv_heads, head_dim)
    v: torch.Tensor
    block_size: int
    bytes_per_token: int

    @property
    def num_blocks(self) -> int:
        return self.k.shape[1]


def allocate_kv_cache(model: ModelConfig, engine: EngineConfig, dtype: torch.dtype = torch.float32) -> KVCache:
    dtype_bytes = torch.tensor([], dtype=dtype).element_size()
    per_token = model.kv_bytes_per_token(dtype_bytes)
    num_blocks = engine.kv_cache_bytes // (per_token * engine.block_size)
    if num_blocks < 2:
        raise EngineError(
            f"kv_cache_bytes={engine.kv_cache_bytes} holds fewer than 2 blocks of {engine.block_size} tokens "
            f"at {per_token} bytes per token; raise the budget"
        )
    shape = (model.num_layers, num_blocks, engine.block_size, model.num_kv_heads, model.head_dim)
    # zeros, not empty: masked-out keys are multiplied by a zero weight, and 0 * NaN from
    # uninitialised memory would poison the output. On Linux the zero pages are lazy.
    k = torch.zeros(shape, dtype=dtype, device=engine.device)
    v = torch.zeros(shape, dtype=dtype, device=engine.device)
    log.info(
        "KV cache: %d bytes per token (2 x %d layers x %d kv heads x %d head dim x %d bytes); "
        "%d blocks of %d tokens = %d tokens in %.1f MiB",
        per_token,
        model.num_layers,
        model.num_kv_heads,
        model.head_dim,
        dtype_bytes,
        num_blocks,
        engine.block_size,
        num_blocks * engine.block_size,
        2 * k.numel() * dtype_bytes / 2**20,
    )
    return KVCache(k, v, engine.block_size, per_token)


class BlockPool:
    """Free-list of block ids."""

    def __init__(self, num_blocks: int):
        self.num_blocks = num_blocks
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() hands out low ids first

    @property
    def num_free(self) -> int:
        return len(self._free)

    def allocate(self, n: int) -> list[int]:
        if n > len(self._free):
            raise EngineError(f"asked for {n} KV blocks, {len(self._free)} free")  # callers check first
        return [self._free.pop() for _ in range(n)]

    def free(self, blocks: list[int]) -> None:
        self._free.extend(blocks)
