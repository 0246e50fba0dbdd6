"""engine/cuda/prefill_attention.py at 6d0e700, frozen: the baseline of ab_pipe.py.

Prefill attention over the paged KV cache: chunks of prompt tokens, any cached prefix.

A flash-attention kernel whose keys and values are read through each sequence's
block table: the chunk's own K/V were already stored in the cache (rope_store.py),
so a chunk that follows a cached prefix and a cold prompt take the same path, and
nothing is gathered into a contiguous copy. Causality is aligned to the lower right:
query i of a chunk of q_len tokens over kv_len keys sits at absolute position
kv_len - q_len + i and sees keys 0..that position. All prefill chunks of a step run
in one launch: grid (query tiles, sequences, heads).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _attend_block(
    acc,
    m,
    l,
    q,
    n,
    k_ptr,
    v_ptr,
    table_ptr,
    s,
    table_stride,
    kh,
    kv_len,
    q_pos,
    scale_log2,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,
):
    """One block of keys into the running softmax (base 2: scale_log2 folds in log2(e))."""
    tok = n + tl.arange(0, BLOCK_N)
    d = tl.arange(0, D)
    valid = tok < kv_len
    block = tl.load(table_ptr + s * table_stride + tok // BS, mask=valid, other=0).to(tl.int64)
    kv_off = ((block * BS + tok % BS)[:, None] * KVH + kh) * D + d[None, :]
    k = tl.load(k_ptr + kv_off, mask=valid[:, None], other=0.0)
    sc = tl.dot(q, tl.trans(k))
    if MASKED:
        sc = tl.where((tok[None, :] <= q_pos[:, None]) & valid[None, :], sc, float("-inf"))
    # The scale rides on the max and on one multiply-add per score; the values' product
    # accumulates into the rescaled acc inside the MMA.
    m_new = tl.maximum(m, tl.max(sc, axis=1) * scale_log2)
    alpha = tl.exp2(m - m_new)
    p = tl.exp2(sc * scale_log2 - m_new[:, None])
    l = l * alpha + tl.sum(p, axis=1)
    v = tl.load(v_ptr + kv_off, mask=valid[:, None], other=0.0)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, m_new, l


@triton.jit
def _prefill_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    out_ptr,
    table_ptr,
    q_start_ptr,
    q_len_ptr,
    kv_len_ptr,
    scale_log2,
    table_stride,
    H: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # The last query tiles see the most keys: they start first, so the short ones fill the tail.
    tile = tl.num_programs(0) - 1 - tl.program_id(0)
    s = tl.program_id(1).to(tl.int64)
    h = tl.program_id(2)
    q_len = tl.load(q_len_ptr + s)
    if tile * BLOCK_M >= q_len:
        return
    q_start = tl.load(q_start_ptr + s).to(tl.int64)
    kv_len = tl.load(kv_len_ptr + s)
    prefix = kv_len - q_len
    kh = h // (H // KVH)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < q_len
    q_pos = prefix + rows
    d = tl.arange(0, D)
    q = tl.load(q_ptr + ((q_start + rows)[:, None] * H + h) * D + d[None, :], mask=row_ok[:, None], other=0.0)
    m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    # Keys up to the tile's first position are visible to all its rows: no mask. Then the
    # diagonal blocks, masked.
    unmasked = (prefix + tile * BLOCK_M + 1) // BLOCK_N * BLOCK_N
    end = tl.minimum(kv_len, prefix + (tile + 1) * BLOCK_M)
    for masked in tl.static_range(2):
        for n in range(unmasked if masked else 0, end if masked else unmasked, BLOCK_N):
            acc, m, l = _attend_block(
                acc,
                m,
                l,
                q,
                n,
                k_ptr,
                v_ptr,
                table_ptr,
                s,
                table_stride,
                kh,
                kv_len,
                q_pos,
                scale_log2,
                KVH,
                D,
                BS,
                BLOCK_N,
                masked,
            )
    out = acc / l[:, None]
    tl.store(
        out_ptr + ((q_start + rows)[:, None] * H + h) * D + d[None, :],
        out.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )


# (BLOCK_M, BLOCK_N, warps, stages) by head dim: the fastest of five on an H200
# (benchmarks/results/gpu-h200-prefill-2026-12-02/prefill-ab.log).
CONFIGS = {64: (128, 128, 4, 3), 128: (128, 128, 8, 3)}


def prefill_attention(
    q: torch.Tensor,  # (T, H, D), contiguous: every row of the step
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D) of one layer
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (S, W) int32, one row per prefill chunk
    q_start: torch.Tensor,  # (S,) int32: first row of each chunk in q
    q_len: torch.Tensor,  # (S,) int32
    kv_len: torch.Tensor,  # (S,) int32: cached prefix + q_len
    max_q_len: int,
    scale: float,
    out: torch.Tensor,  # (T, H, D): the chunks' rows are written
) -> None:
    _, h, d = q.shape
    _, bs, kvh, _ = k_cache.shape
    block_m, block_n, warps, stages = CONFIGS.get(d, (64, 64, 4, 2))
    grid = (triton.cdiv(max_q_len, block_m), block_tables.shape[0], h)
    _prefill_kernel[grid](
        q,
        k_cache,
        v_cache,
        out,
        block_tables,
        q_start,
        q_len,
        kv_len,
        scale * 1.4426950408889634,  # log2(e): the kernel's softmax is base 2
        block_tables.stride(0),
        H=h,
        KVH=kvh,
        D=d,
        BS=bs,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        num_warps=warps,
        num_stages=stages,
    )
