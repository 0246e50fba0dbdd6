"""Projections: y = x @ W.T with W stored (out, in), the RMSNorm before, SiLU·up before, or the
residual add after fused in.

A decode step of one row is a matrix-vector product bound by reading W once, so it takes
one Triton kernel that fuses its neighbours:

- norm: x is the residual stream; each program reads its whole row anyway (there is no
  split over K), so it sums x² on the way and scales its dot products by 1/rms at the end;
- gated: x is [gate | up] from the gate/up projection; SiLU(gate)·up is made on the fly;
- residual: the result is added into the residual stream in place, nothing else is written;
- rope (the QKV projection): Q and K heads are rotated and K and V stored into the paged
  cache in the epilogue, as rope_store.py does for larger steps; the model keeps each Q and
  K head's rows in RoPE pairs (i, i + D/2) (model.py), so a program holds both halves of
  every pair it rotates, and the QKV output itself is never written.

Each program owns BLOCK_N whole output rows and walks K with no split, so there is no
second reduction kernel and no atomics. Every projection is a programmatic dependent launch
(pdl), and so is the attention kernel: a projection's first weight tiles are read before
it waits for the kernel in front, so the weights stream during that kernel's tail. Behind
attention, which is short of work at batch 1, the output projection reads its whole weight
while attention runs where its tile allows (the Llama-3.2-1B one: two tiles ahead of its
2,048 columns). On an H200, attention and output projection as dependent launches took the
batch-1 step from 843 to 837 us (1B) and held it at 3.99 ms (8B); the whole-weight tile
made the 1B step 829 us (benchmarks/results/gpu-h200-overlap-2026-12-02/).

The output projection can also leave each row's first maximum (its greedy token): each
program writes its own, and a one-program kernel picks the row's (_argmax_merge). That is
the decode graph's greedy token, with no kernel after the graph.
More rows take a GEMM (gemm.py: cuBLAS, or quack's where it measured faster) with the same
fusions done as separate kernels (norm, SiLU·up) or in the GEMM's epilogue (the residual add; SiLU·up
where quack's gated GEMM was chosen).
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from engine import cuda
from engine.cuda.activation import silu_and_mul
from engine.cuda.gemm import matmul, matmul_swiglu
from engine.cuda.norm import rms_norm
from engine.cuda.pdl import pdl_launch_dependents, pdl_wait
from engine.cuda.rope_store import rope_and_store
from engine.sampler import argmax

# Rows beyond the first are a grid axis whose programs read W again (2 and 4 rows took 1.2-2x
# and 1.8-3.9x the time of one on an H200, cuBLAS the same time): so only single rows take it.
GEMV_MAX_ROWS = 1


@triton.jit
def _x_chunk(x_row, g_ptr, ks, K, NORM: tl.constexpr, GATED: tl.constexpr):
    """One chunk of the row as the matrix sees it, in float32, and its squares (for the norm)."""
    kmask = ks < K
    x = tl.load(x_row + ks, mask=kmask, other=0.0).to(tl.float32)
    sq = x * x
    if NORM:
        x *= tl.load(g_ptr + ks, mask=kmask, other=0.0).to(tl.float32)
    if GATED:
        up = tl.load(x_row + K + ks, mask=kmask, other=0.0).to(tl.float32)
        x = x / (1.0 + tl.exp(-x)) * up
    return x, sq


@triton.jit
def _w_tile(w_rows, ks, rmask, K):
    """The weight tile of the program's rows at columns ks (zeros past the matrix)."""
    return tl.load(w_rows + ks[None, :], mask=rmask[:, None] & (ks < K)[None, :], other=0.0)


@triton.jit
def _gemv_kernel(
    x_ptr,
    w_ptr,
    g_ptr,
    bias_ptr,
    out_ptr,
    N,
    K,
    eps,
    pos_ptr,
    cos_ptr,
    sin_ptr,
    slot_ptr,
    k_cache_ptr,
    v_cache_ptr,
    best_ptr,
    best_at_ptr,
    NORM: tl.constexpr,
    GATED: tl.constexpr,
    RESIDUAL: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ROPE: tl.constexpr,
    ARGMAX: tl.constexpr,
    H: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    AHEAD: tl.constexpr,
):
    pdl_launch_dependents()
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = tl.program_id(1).to(tl.int64)
    rmask = rows < N
    x_row = x_ptr + m * (2 * K if GATED else K)
    w_rows = w_ptr + rows[:, None].to(tl.int64) * K
    # The weights are no kernel's output, so the first tile is asked for before waiting on
    # the kernel in front (a no-op unless launched as a dependent launch); then each tile is
    # requested one step ahead of its use. (Asking for 2 or 4 more tiles into L2 before the wait,
    # with prefetch.global.L2, made each projection 2-40% slower on an H200.)
    # With AHEAD = 2 two tiles are in flight while one is used.
    ks = tl.arange(0, BLOCK_K)
    w_next = _w_tile(w_rows, ks, rmask, K)
    w_after = _w_tile(w_rows, BLOCK_K + ks, rmask, K) if AHEAD == 2 else w_next
    pdl_wait()
    acc = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    sq = tl.zeros((BLOCK_K,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        w = w_next
        w_new = _w_tile(w_rows, k0 + AHEAD * BLOCK_K + ks, rmask, K)
        if AHEAD == 2:
            w_next, w_after = w_after, w_new
        else:
            w_next = w_new
        x, s = _x_chunk(x_row, g_ptr, k0 + tl.arange(0, BLOCK_K), K, NORM, GATED)
        sq += s
        acc += w.to(tl.float32) * x[None, :]
    y = tl.sum(acc, axis=1)
    if NORM:
        y *= 1.0 / tl.sqrt(tl.sum(sq, axis=0) / K + eps)
    if HAS_BIAS:
        y += tl.load(bias_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
    if ARGMAX:  # each program's first maximum; _argmax_merge picks the row's
        ym = tl.where(rmask, y, float("-inf"))
        at = m * tl.num_programs(0) + tl.program_id(0)
        tl.store(best_ptr + at, tl.max(ym, axis=0))
        tl.store(best_at_ptr + at, tl.program_id(0) * BLOCK_N + tl.argmax(ym, axis=0))
    if ROPE:
        _rope_store(
            y,
            m,
            tl.program_id(0) * BLOCK_N,
            pos_ptr,
            cos_ptr,
            sin_ptr,
            slot_ptr,
            out_ptr,
            k_cache_ptr,
            v_cache_ptr,
            H,
            KVH,
            D,
            BLOCK_N,
        )
    else:
        out = out_ptr + m * N + rows
        if RESIDUAL:
            y += tl.load(out, mask=rmask, other=0.0).to(tl.float32)
        tl.store(out, y.to(out_ptr.dtype.element_ty), mask=rmask)


@triton.jit
def _rope_store(
    y,
    m,
    first,
    pos_ptr,
    cos_ptr,
    sin_ptr,
    slot_ptr,
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    H: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """y: BLOCK_N outputs of row m of the pair-ordered QKV projection, from output `first`,
    all inside one head. Q heads go to q (T, H, D), K and V heads to the cache at row m's slot."""
    head = first // D
    if head < H + KVH:  # rotate: pairs (i, i + D/2) sit side by side
        x1, x2 = tl.split(tl.reshape(y, (BLOCK_N // 2, 2)))
        i = (first % D) // 2 + tl.arange(0, BLOCK_N // 2)
        pos = tl.load(pos_ptr + m).to(tl.int64)
        cos = tl.load(cos_ptr + pos * (D // 2) + i)
        sin = tl.load(sin_ptr + pos * (D // 2) + i)
        o1 = x1 * cos - x2 * sin
        o2 = x2 * cos + x1 * sin
        if head < H:
            dst = q_ptr + (m * H + head) * D
            tl.store(dst + i, o1.to(q_ptr.dtype.element_ty))
            tl.store(dst + D // 2 + i, o2.to(q_ptr.dtype.element_ty))
        else:
            slot = tl.load(slot_ptr + m)
            if slot >= 0:
                dst = k_cache_ptr + (slot * KVH + head - H) * D
                tl.store(dst + i, o1.to(k_cache_ptr.dtype.element_ty))
                tl.store(dst + D // 2 + i, o2.to(k_cache_ptr.dtype.element_ty))
    else:
        slot = tl.load(slot_ptr + m)
        if slot >= 0:
            dst = v_cache_ptr + (slot * KVH + head - H - KVH) * D + first % D
            tl.store(dst + tl.arange(0, BLOCK_N), y.to(v_cache_ptr.dtype.element_ty))


@triton.jit
def _argmax_merge(best_ptr, best_at_ptr, ids_ptr, P, BLOCK: tl.constexpr):
    """Row m's first maximum from its P programs' first maxima (the earliest program wins a tie)."""
    m = tl.program_id(0).to(tl.int64)
    p = tl.arange(0, BLOCK)
    best = tl.load(best_ptr + m * P + p, mask=p < P, other=float("-inf"))
    winner = tl.argmax(best, axis=0)
    tl.store(ids_ptr + m, tl.load(best_at_ptr + m * P + winner).to(tl.int64))


# Tiles of 4,096 weights: 16 x 256 with 4 warps for wide matrices (gate/up, LM head), 8 x 512 with
# 8 warps otherwise, the best or near it for most Llama-3 projections on an H200 (bench_gpu.py
# --part gemv). Where a shape measured faster with another tile in the model's own decode step,
# that tile is kept here: the Llama-3-8B QKV projection reads two tiles ahead (4.05 -> 4.02 ms per
# batch-1 step, benchmarks/results/gpu-h200-2026-12-02/), and the Llama-3.2-1B projections
# take the best of a sweep over the whole captured step, one matrix at a time (843 -> 821 us,
# benchmarks/results/gpu-h200-overlap-2026-12-02/).
TUNED: dict[tuple[int, int], tuple[int, int, int, int]] = {
    (6144, 4096): (16, 256, 8, 2),
    (3072, 2048): (8, 512, 4, 2),
    (2048, 2048): (8, 1024, 8, 2),
    (2048, 8192): (8, 1024, 8, 1),
    (16384, 2048): (16, 256, 8, 1),
    # Qwen3-30B-A3B's QKV and output projections, from bench_gpu.py --part moe --moe-tiles on an H100:
    # 1,697 us a batch-1 step against 1,724 and 1,726 with the default tile for each
    # (benchmarks/results/moe-split-h100-2026-12-07/).
    (5120, 2048): (16, 256, 8, 2),
    (2048, 4096): (8, 1024, 8, 2),
}


def gemv_config(n: int, k: int) -> tuple[int, int, int, int]:
    """(BLOCK_N, BLOCK_K, num_warps, tiles read ahead) for an (n, k) weight."""
    if (n, k) in TUNED:
        return TUNED[(n, k)]
    return (16, 256, 4, 1) if n >= 16384 else (8, 512, 8, 1)


class RopeStore(NamedTuple):
    """Where the QKV projection's epilogue puts its result: RoPE at `positions`, K and V
    into one layer's cache at `slots` (-1 stores nothing)."""

    positions: torch.Tensor  # (T,)
    cos: torch.Tensor  # (max_len, D / 2) float32
    sin: torch.Tensor
    slots: torch.Tensor  # (T,) int64
    k_cache: torch.Tensor  # (num_blocks, block_size, KVH, D)
    v_cache: torch.Tensor
    num_heads: int
    num_kv_heads: int
    head_dim: int


def gemv(
    x,
    w,
    out,
    norm=None,
    eps=0.0,
    gated=False,
    residual=False,
    bias=None,
    rope: RopeStore | None = None,
    ids: torch.Tensor | None = None,
    config=None,
) -> None:
    """out[m] (+)= f(x[m]) @ w.T for the rows of x, in one kernel (see the module docstring); with
    rope, out is Q (T, H, D); with ids, each row's first maximum goes there too (one more, small
    kernel)."""
    n, k = w.shape
    assert x.is_contiguous() and w.is_contiguous() and out.is_contiguous()
    assert x.shape[-1] == (2 * k if gated else k) and out.numel() == x.shape[0] * (
        rope.num_heads * rope.head_dim if rope else n
    )
    block_n, block_k, warps, ahead = config or gemv_config(n, k)
    r = rope or RopeStore(w, w, w, w, w, w, 1, 1, 2)
    assert not rope or r.head_dim % block_n == 0
    programs = triton.cdiv(n, block_n)
    if ids is not None:
        best = torch.empty((x.shape[0], programs), dtype=torch.float32, device=x.device)
        best_at = torch.empty((x.shape[0], programs), dtype=torch.int32, device=x.device)
    _gemv_kernel[(programs, x.shape[0])](
        x,
        w,
        norm if norm is not None else w,
        bias if bias is not None else w,
        out,
        n,
        k,
        eps,
        r.positions,
        r.cos,
        r.sin,
        r.slots,
        r.k_cache,
        r.v_cache,
        best if ids is not None else w,
        best_at if ids is not None else w,
        NORM=norm is not None,
        GATED=gated,
        RESIDUAL=residual,
        HAS_BIAS=bias is not None,
        ROPE=rope is not None,
        ARGMAX=ids is not None,
        H=r.num_heads,
        KVH=r.num_kv_heads,
        D=r.head_dim,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        AHEAD=ahead,
        num_warps=warps,
        launch_pdl=cuda.PDL,
    )
    if ids is not None:
        _argmax_merge[(x.shape[0],)](best, best_at, ids, programs, BLOCK=triton.next_power_of_2(programs), num_warps=8)


def qkv_rope_store(
    x: torch.Tensor,
    w: torch.Tensor,
    norm: torch.Tensor,
    eps: float,
    bias: torch.Tensor | None,
    rope: RopeStore,
    qk_norm: torch.Tensor | None = None,
    keep_kv: bool = False,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """The QKV projection of the normalised residual stream x, RoPE on Q and K, K and V stored
    into the cache; returns Q (T, H, D), and with keep_kv also the step's own rotated K and V
    (each (T, KVH, D), views of the projection's output) where a GEMM made it (None at one row).
    w holds each Q and K head's rows in RoPE pairs. With
    qk_norm (Qwen3), each Q and K head is RMS-normalised before RoPE: that needs whole heads, which
    the matrix-vector kernel's programs do not hold, so it runs in the RoPE kernel at every size."""
    t = x.shape[0]
    if t <= GEMV_MAX_ROWS and qk_norm is None:
        q = torch.empty((t, rope.num_heads, rope.head_dim), dtype=x.dtype, device=x.device)
        if t:
            gemv(x, w, q, norm, eps, bias=bias, rope=rope)
        return q, None
    qkv = project(x, w, norm=norm, eps=eps, bias=bias)
    q = rope_and_store(qkv, *rope, qk_norm=qk_norm, eps=eps, keep_k=keep_kv)
    if not keep_kv:
        return q, None
    h, kvh = rope.num_heads, rope.num_kv_heads
    heads = qkv.view(t, h + 2 * kvh, rope.head_dim)
    return q, (heads[:, h : h + kvh], heads[:, h + kvh :])


def project(
    x: torch.Tensor,  # (T, in), or (T, 2 * in) when gated
    w: torch.Tensor,  # (out, in)
    *,
    norm: torch.Tensor | None = None,  # RMSNorm weight: x is normalised first
    eps: float = 0.0,
    gated: bool = False,  # x is [gate | up]: SiLU(gate) * up first
    bias: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,  # (T, out): residual += result, in place, and returned
    out_dtype: torch.dtype | None = None,
    ids: torch.Tensor | None = None,  # (T,) int64: each row's first maximum is written here too
    swiglu: bool = False,  # w is [gate; up]: SiLU(gate)·up of the product is returned where a GEMM's
    # epilogue makes it (gemm.py chose one for this many rows), else the product [gate | up]
) -> torch.Tensor:
    t = x.shape[0]
    if t <= GEMV_MAX_ROWS:
        out = (
            residual
            if residual is not None
            else torch.empty((t, w.shape[0]), dtype=out_dtype or x.dtype, device=x.device)
        )
        if t:
            gemv(x, w, out, norm, eps, gated, residual is not None, bias, ids=ids)
        return out
    if norm is not None:
        x = rms_norm(x, norm, eps)
    if gated:
        x = silu_and_mul(x)
    if residual is not None:
        assert bias is None
        return matmul(x, w, residual=residual)
    if swiglu and bias is None and (act := matmul_swiglu(x, w)) is not None:
        return act
    if bias is None:
        y = matmul(x, w, out_dtype=out_dtype)
    else:
        y = F.linear(x, w, bias)
        y = y if out_dtype is None else y.to(out_dtype)
    if ids is not None:
        ids.copy_(argmax(y))
    return y
