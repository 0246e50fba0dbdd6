"""Decode attention on the CPU (decode_attention.c): float32 queries, a float32 or bfloat16 cache,
one query per sequence."""

import torch

from engine.cpu.build import library


def decode_attention(
    q: torch.Tensor,  # (B, H, D) float32
    k: torch.Tensor,  # (B, KVH, D): the new keys, stored at `slots` first
    v: torch.Tensor,
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D) float32 or bfloat16
    v_cache: torch.Tensor,
    slots: torch.Tensor,  # (B,) int64
    tables: torch.Tensor,  # (B, width) int64 block ids
    lens: torch.Tensor,  # (B,) int32 context lengths, the new token included
    scale: float,
) -> torch.Tensor:
    lib = library()
    assert not isinstance(lib, str), lib
    b, h, d = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    lib.decode_attention(
        b,
        h,
        k.shape[1],
        d,
        q.data_ptr(),
        k.data_ptr(),
        v.data_ptr(),
        k_cache.data_ptr(),
        v_cache.data_ptr(),
        int(k_cache.dtype == torch.bfloat16),
        k_cache.shape[1],
        slots.data_ptr(),
        tables.data_ptr(),
        tables.shape[1],
        lens.data_ptr(),
        scale,
        out.data_ptr(),
    )
    return out
