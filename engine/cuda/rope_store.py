"""RoPE on the Q and K heads of the fused QKV projection, and K/V written to the cache.

The projection's Q and K heads come pair-ordered (the model keeps their weight rows so:
model.py): outputs 2i and 2i + 1 of a head are dimensions i and i + D/2. One program
per (block of tokens, head): it reads each token's head as one contiguous row and splits
it into its even and odd outputs. Q heads are rotated into a fresh (T, H, D) tensor;
K heads are rotated and stored with their V head straight into the paged cache at
the token's slot (block_id * block_size + offset), so the new K/V never exist as a
separate tensor. A slot of -1 (a padding row of a captured CUDA graph) stores nothing.
Rotation is rotate_half RoPE in float32 with the model's float32 cos/sin tables.
With keep_k the rotated K heads are also written back over their place in the QKV tensor (in the
cache's order, halves rather than pairs): prefill chunks that start at position 0 see no keys but
their own, and FlashAttention-4 reads them there, contiguous, instead of through the block tables
(flash.py).

Qwen3's RMSNorm over each Q and K head runs in the same program, before the rotation: it holds
the whole head already, so the norm costs no kernel of its own.

The kernel is a programmatic dependent launch (as linear.py's are): it reads the positions, slots,
cos/sin and norm weights before waiting for the projection in front, and lets the attention kernel
behind it start at once.
"""

import torch
import triton
import triton.language as tl

from engine import cuda
from engine.cuda.pdl import pdl_launch_dependents, pdl_wait


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
    norm_ptr,
    T,
    eps,
    H: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BT: tl.constexpr,
    QK_NORM: tl.constexpr,
    KEEP_K: tl.constexpr,
):
    pdl_launch_dependents()
    t = (tl.program_id(0) * BT + tl.arange(0, BT)).to(tl.int64)
    h = tl.program_id(1)
    ok = t < T
    half = tl.arange(0, D // 2)
    full = tl.arange(0, D)
    row = qkv_ptr + t[:, None] * (H + 2 * KVH) * D
    # Positions, slots and the tables are no kernel's output: read before waiting for the projection.
    pos = tl.load(pos_ptr + t, mask=ok, other=0).to(tl.int64)
    angle = pos[:, None] * (D // 2) + half[None, :]
    cos = tl.load(cos_ptr + angle, mask=ok[:, None])
    sin = tl.load(sin_ptr + angle, mask=ok[:, None])
    if QK_NORM:
        w = tl.load(norm_ptr + h * D + full).to(tl.float32)
    slot = tl.load(slot_ptr + t, mask=ok, other=-1)
    pdl_wait()
    x = tl.load(row + h * D + full[None, :], mask=ok[:, None], other=0.0)
    if QK_NORM:  # as transformers does it: statistics in float32, the weight applied in the model's dtype
        xf = x.to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / D + eps)
        x = ((xf * rstd[:, None]).to(x.dtype).to(tl.float32) * w[None, :]).to(x.dtype)
    x = x.to(tl.float32)
    x1, x2 = tl.split(tl.reshape(x, (BT, D // 2, 2)))
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if h < H:
        q_at = q_out_ptr + (t[:, None] * H + h) * D + half[None, :]
        tl.store(q_at, o1.to(q_out_ptr.dtype.element_ty), mask=ok[:, None])
        tl.store(q_at + D // 2, o2.to(q_out_ptr.dtype.element_ty), mask=ok[:, None])
    else:
        keep = (slot >= 0)[:, None]
        kh = h - H
        at = (slot[:, None] * KVH + kh) * D
        tl.store(k_cache_ptr + at + half[None, :], o1.to(k_cache_ptr.dtype.element_ty), mask=keep)
        tl.store(k_cache_ptr + at + D // 2 + half[None, :], o2.to(k_cache_ptr.dtype.element_ty), mask=keep)
        if KEEP_K:
            # Written over the loaded head in another order (halves, not pairs): no warp may store before
            # every warp has loaded, or a lagging one reads a rotated value (seen on an H100: one head
            # in about 16,000 wrong, once in a few runs).
            tl.debug_barrier()
            tl.store(row + h * D + half[None, :], o1.to(qkv_ptr.dtype.element_ty), mask=ok[:, None])
            tl.store(row + h * D + D // 2 + half[None, :], o2.to(qkv_ptr.dtype.element_ty), mask=ok[:, None])
        v = tl.load(row + (H + KVH + kh) * D + full[None, :], mask=keep)
        tl.store(v_cache_ptr + at + full[None, :], v, mask=keep)


def token_block(t: int) -> int:
    """Tokens per program: one for a decode step's few rows (a program per head and row
    keeps the SMs busy), 8 for a prefill chunk of 8,192 (on an H200 the fastest of 1 to 64:
    55 us against 202 us for one token per program, benchmarks/results/gpu-h200-prefill-host-2026-12-02)."""
    return min(8, triton.next_power_of_2(max(1, t // 1024)))


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
    qk_norm: torch.Tensor | None = None,  # (H + KVH, D) pair-ordered: RMSNorm each Q and K head first
    eps: float = 0.0,
    keep_k: bool = False,  # the rotated K heads also written back into qkv
) -> torch.Tensor:
    assert qkv.is_contiguous() and k_cache.is_contiguous() and v_cache.is_contiguous()
    t = qkv.shape[0]
    q = torch.empty((t, num_heads, head_dim), dtype=qkv.dtype, device=qkv.device)
    if t:
        bt = token_block(t)
        _rope_store_kernel[(triton.cdiv(t, bt), num_heads + num_kv_heads)](
            qkv,
            positions,
            cos,
            sin,
            slot_mapping,
            q,
            k_cache,
            v_cache,
            qk_norm if qk_norm is not None else qkv,
            t,
            eps,
            H=num_heads,
            KVH=num_kv_heads,
            D=head_dim,
            BT=bt,
            QK_NORM=qk_norm is not None,
            KEEP_K=keep_k,
            num_warps=1 if bt == 1 else 4,
            launch_pdl=cuda.PDL,
        )
    return q
