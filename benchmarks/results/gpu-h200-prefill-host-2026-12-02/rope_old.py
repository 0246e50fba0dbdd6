"""RoPE on the Q and K heads of the fused QKV projection, and K/V written to the cache.

The projection's Q and K heads come pair-ordered (the model keeps their weight rows so:
model.py): outputs 2i and 2i + 1 of a head are dimensions i and i + D/2. One program
per (token, head). Q heads are rotated into a fresh (T, H, D) tensor;
K heads are rotated and stored with their V head straight into the paged cache at
the token's slot (block_id * block_size + offset), so the new K/V never exist as a
separate tensor. A slot of -1 (a padding row of a captured CUDA graph) stores nothing.
Rotation is rotate_half RoPE in float32 with the model's float32 cos/sin tables.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rope_store_kernel(
    qkv_ptr,
    pos_ptr,
    cos_ptr,
    sin_ptr,
    slot_ptr,
    q_out_ptr,
    k_cache_ptr,
    v_cache_ptr,
    H: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    half = tl.arange(0, D // 2)
    row = qkv_ptr + t * (H + 2 * KVH) * D
    pos = tl.load(pos_ptr + t).to(tl.int64)
    cos = tl.load(cos_ptr + pos * (D // 2) + half)
    sin = tl.load(sin_ptr + pos * (D // 2) + half)
    x1 = tl.load(row + h * D + 2 * half).to(tl.float32)
    x2 = tl.load(row + h * D + 2 * half + 1).to(tl.float32)
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if h < H:
        dst = q_out_ptr + (t * H + h) * D
        tl.store(dst + half, o1.to(q_out_ptr.dtype.element_ty))
        tl.store(dst + D // 2 + half, o2.to(q_out_ptr.dtype.element_ty))
    else:
        slot = tl.load(slot_ptr + t)
        if slot >= 0:
            kh = h - H
            dst = (slot * KVH + kh) * D
            tl.store(k_cache_ptr + dst + half, o1.to(k_cache_ptr.dtype.element_ty))
            tl.store(k_cache_ptr + dst + D // 2 + half, o2.to(k_cache_ptr.dtype.element_ty))
            full = tl.arange(0, D)
            v = tl.load(row + (H + KVH + kh) * D + full)
            tl.store(v_cache_ptr + dst + full, v)


def rope_and_store(
    qkv: torch.Tensor,  # (T, (H + 2 * KVH) * D), contiguous, Q and K heads pair-ordered
    positions: torch.Tensor,  # (T,)
    cos: torch.Tensor,  # (max_len, D / 2) float32
    sin: torch.Tensor,
    slot_mapping: torch.Tensor,  # (T,) int64, -1 = do not store
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D) of one layer
    v_cache: torch.Tensor,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
) -> torch.Tensor:
    assert qkv.is_contiguous() and k_cache.is_contiguous() and v_cache.is_contiguous()
    t = qkv.shape[0]
    q = torch.empty((t, num_heads, head_dim), dtype=qkv.dtype, device=qkv.device)
    if t:
        _rope_store_kernel[(t, num_heads + num_kv_heads)](
            qkv,
            positions,
            cos,
            sin,
            slot_mapping,
            q,
            k_cache,
            v_cache,
            H=num_heads,
            KVH=num_kv_heads,
            D=head_dim,
            num_warps=1,
        )
    return q
