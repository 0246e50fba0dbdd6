"""Decode attention over the paged KV cache: one query token per sequence.

Split-K (flash-decoding) in one kernel: each sequence's context is cut into partitions
of `part` tokens; one program per (sequence, KV head, partition) reads its keys and
values through the block table (no gather into a contiguous copy) and keeps an online
softmax for all the query heads that share the KV head (GQA), so each K/V byte is read
once. A context of one partition is written out at once; otherwise each program leaves
its partial result in a scratch buffer and counts itself in on a per-(sequence, KV head)
counter, and the last one in merges all partitions (split.py: no second kernel, and a
captured graph finds the counters zeroed on every replay). The
grid depends only on the block table's width, never on the context lengths, so a
captured CUDA graph stays valid as sequences grow; partitions past a sequence's end
exit at once, and a sequence of length 0 (a padding row) yields zeros.

It is a programmatic dependent launch: while the QKV projection in front finishes, it reads the
lengths and block tables and, when its programs are few (`tile`), its first tile of keys and
values, all but the new token's, which that projection writes; then it waits. The output
projection behind it starts as soon as every attention program has, reading its weights while
attention works (linear.py).
"""

import torch
import triton
import triton.language as tl

from engine import cuda
from engine.cuda.pdl import pdl_launch_dependents, pdl_wait
from engine.cuda.split import counters, last_to_arrive

MAX_PARTS = 64  # partitions per sequence at most: bounds the scratch buffer and the merge


@triton.jit
def _attend(acc, m, l, q, k, v, valid, scale):
    """One tile of keys and values into the running softmax of the KV head's query heads."""
    s = tl.dot(q, tl.trans(k)) * scale
    s = tl.where(valid[None, :], s, float("-inf"))
    m_new = tl.maximum(m, tl.max(s, axis=1))
    alpha = tl.exp(m - m_new)
    pr = tl.exp(s - m_new[:, None])
    l = l * alpha + tl.sum(pr, axis=1)
    acc = acc * alpha[:, None] + tl.dot(pr.to(v.dtype), v)
    return acc, m_new, l


@triton.jit
def _decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    table_ptr,
    lens_ptr,
    m_ptr,
    l_ptr,
    acc_ptr,
    count_ptr,
    out_ptr,
    scale,
    table_stride,
    num_parts,
    G: tl.constexpr,
    GP: tl.constexpr,
    KVH: tl.constexpr,
    D: tl.constexpr,
    BS: tl.constexpr,
    PART: tl.constexpr,
    BLOCK_N: tl.constexpr,
    AHEAD: tl.constexpr,
):
    pdl_launch_dependents()
    b = tl.program_id(0).to(tl.int64)
    kh = tl.program_id(1)
    p = tl.program_id(2)
    # Lengths and block tables are copied up before the step, so they are read before waiting.
    length = tl.load(lens_ptr + b)
    used = (length + PART - 1) // PART
    g = tl.arange(0, GP)
    d = tl.arange(0, D)
    gmask = g < G
    heads = b * KVH * G + kh * G + g  # rows of (B, H)
    out = out_ptr + heads[:, None] * D + d[None, :]
    start = p * PART
    end = tl.minimum(start + PART, length)
    table = table_ptr + b * table_stride
    first = start + tl.arange(0, BLOCK_N)
    if AHEAD:
        # The kernel in front writes only q and each row's new token (position length - 1); every
        # other key and value was stored by an earlier step. So the first tile of keys and values
        # is read before waiting, with the new token's row left out and read after the wait.
        block = tl.load(table + first // BS, mask=first < end, other=0).to(tl.int64)
        first_off = ((block * BS + first % BS)[:, None] * KVH + kh) * D + d[None, :]
        old = (first < end) & (first < length - 1)
        k = tl.load(k_ptr + first_off, mask=old[:, None], other=0.0)
        v = tl.load(v_ptr + first_off, mask=old[:, None], other=0.0)
        last = tl.maximum(length - 1, 0)
        new_off = ((tl.load(table + last // BS).to(tl.int64) * BS + last % BS) * KVH + kh) * D + d
        block_next = tl.load(table + (first + BLOCK_N) // BS, mask=first + BLOCK_N < end, other=0)
    else:
        block_next = tl.load(table + first // BS, mask=first < end, other=0)
    pdl_wait()
    if p >= used:
        if p == 0:  # length 0: a padding row
            tl.store(out, tl.zeros((GP, D), tl.float32).to(out_ptr.dtype.element_ty), mask=gmask[:, None])
        return
    q = tl.load(q_ptr + heads[:, None] * D + d[None, :], mask=gmask[:, None], other=0.0)
    m = tl.full((GP,), float("-inf"), tl.float32)
    l = tl.zeros((GP,), tl.float32)
    acc = tl.zeros((GP, D), tl.float32)
    if AHEAD:
        new = (first == length - 1)[:, None]  # a later tile is read after the wait, new token and all
        k = tl.where(new, tl.load(k_ptr + new_off)[None, :], k)
        v = tl.where(new, tl.load(v_ptr + new_off)[None, :], v)
        for n in range(start, end, BLOCK_N):
            tok = n + tl.arange(0, BLOCK_N)
            # The next tile is in flight while this one is used.
            nxt = tok + BLOCK_N
            kv_off = ((block_next.to(tl.int64) * BS + nxt % BS)[:, None] * KVH + kh) * D + d[None, :]
            k_next = tl.load(k_ptr + kv_off, mask=(nxt < end)[:, None], other=0.0)
            v_next = tl.load(v_ptr + kv_off, mask=(nxt < end)[:, None], other=0.0)
            block_next = tl.load(table + (nxt + BLOCK_N) // BS, mask=nxt + BLOCK_N < end, other=0)
            acc, m, l = _attend(acc, m, l, q, k, v, tok < end, scale)
            k, v = k_next, v_next
    else:
        for n in range(start, end, BLOCK_N):
            tok = n + tl.arange(0, BLOCK_N)
            valid = tok < end
            block = block_next.to(tl.int64)
            after = tok + BLOCK_N
            block_next = tl.load(table + after // BS, mask=after < end, other=0)
            kv_off = ((block * BS + tok % BS)[:, None] * KVH + kh) * D + d[None, :]
            k = tl.load(k_ptr + kv_off, mask=valid[:, None], other=0.0)
            v = tl.load(v_ptr + kv_off, mask=valid[:, None], other=0.0)  # in flight with k, not after the softmax
            acc, m, l = _attend(acc, m, l, q, k, v, valid, scale)
    if used == 1:
        tl.store(out, (acc / l[:, None]).to(out_ptr.dtype.element_ty), mask=gmask[:, None])
        return
    row = heads * num_parts + p
    tl.store(m_ptr + row, m, mask=gmask)
    tl.store(l_ptr + row, l, mask=gmask)
    tl.store(acc_ptr + row[:, None] * D + d[None, :], acc, mask=gmask[:, None])
    if last_to_arrive(count_ptr + b * KVH + kh, used):
        mm = tl.full((GP,), float("-inf"), tl.float32)
        ll = tl.zeros((GP,), tl.float32)
        aa = tl.zeros((GP, D), tl.float32)
        for i in range(used):
            r = heads * num_parts + i
            # .cg: read from L2, where the other programs' stores are, never a stale L1 line.
            mi = tl.load(m_ptr + r, mask=gmask, other=0.0, cache_modifier=".cg")
            li = tl.load(l_ptr + r, mask=gmask, other=0.0, cache_modifier=".cg")
            ai = tl.load(acc_ptr + r[:, None] * D + d[None, :], mask=gmask[:, None], other=0.0, cache_modifier=".cg")
            m_new = tl.maximum(mm, mi)
            a, w = tl.exp(mm - m_new), tl.exp(mi - m_new)
            ll = ll * a + li * w
            aa = aa * a[:, None] + ai * w[:, None]
            mm = m_new
        tl.store(out, (aa / tl.where(ll > 0, ll, 1.0)[:, None]).to(out_ptr.dtype.element_ty), mask=gmask[:, None])


def partition_size(max_tokens: int, programs: int, num_sms: int) -> int:
    """Tokens per partition: at least 256; with few (sequence, KV head) programs, as few as
    MAX_PARTS allows; with enough to fill the GPU, about four programs per SM in all, because
    every partition past a sequence's end is still a program to launch, and merging many
    partitions costs more than it spreads. On an H200, in the batch-1 decode graph at a
    4,000-token context, 256-token partitions instead of 64 took the Llama-3.2-1B step from
    1,127 to 932 us and the Llama-3-8B step from 4,603 to 4,290 us; at 190 tokens two runs
    disagreed (0.3% faster, 2% slower: benchmarks/results/gpu-h200-overlap-2026-12-02/); at batch 128 over a
    4,096-token table, one partition instead of sixteen made the step 2.5% faster
    (benchmarks/results/gpu-h200-decode-ahead-2026-12-02/)."""
    if programs >= num_sms:
        parts = -(-4 * num_sms // programs)
        return max(256, -(-max_tokens // parts // 64) * 64)
    part = 256
    while part * MAX_PARTS < max_tokens:
        part *= 2
    return part


def tile(head_dim: int, programs: int, num_sms: int) -> tuple[int, int, bool]:
    """(tokens per tile, warps, whether the first tile is read before the wait). With few
    (sequence, KV head) programs, attention is a short kernel every later one waits for, so each
    program reads its first tile while the QKV projection in front finishes, and the tile is
    large: 256 tokens (head dim 64) or 128, 8 warps. On an H200 that took the Llama-3.2-1B
    batch-1 step from 814 to 771 us, and the Llama-3-8B one at a 1,000-token context from 4,200
    to 4,088 us. With enough programs to fill the GPU it made the 8B batch-128 step 5 to 13%
    slower (benchmarks/results/gpu-h200-attn-ahead-2026-12-02/): there the tiles and loop stay
    as they were, 128 or 64 tokens and 4 warps."""
    if programs < num_sms:
        return (256 if head_dim <= 64 else 128), 8, True
    return (128 if head_dim <= 64 else 64), 4, False


def decode_attention(
    q: torch.Tensor,  # (B, H, D), contiguous
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D) of one layer
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (B, W) int32; entries past a sequence's blocks are never read
    context_lens: torch.Tensor,  # (B,) int32: tokens of context, the new one included
    scale: float,
    out: torch.Tensor,  # (>= B, H, D): rows [0, B) are written
) -> None:
    b, h, d = q.shape
    _, bs, kvh, _ = k_cache.shape
    group = h // kvh
    width = block_tables.shape[1]
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    part = partition_size(width * bs, b * kvh, sms)
    block_n, warps, ahead = tile(d, b * kvh, sms)
    num_parts = triton.cdiv(width * bs, part)
    m = torch.empty((b, h, num_parts), dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty((b, h, num_parts, d), dtype=torch.float32, device=q.device)
    _decode_kernel[(b, kvh, num_parts)](
        q,
        k_cache,
        v_cache,
        block_tables,
        context_lens,
        m,
        l,
        acc,
        counters("attention", q.device, b * kvh),
        out,
        scale,
        block_tables.stride(0),
        num_parts,
        G=group,
        GP=max(16, triton.next_power_of_2(group)),
        KVH=kvh,
        D=d,
        BS=bs,
        PART=part,
        BLOCK_N=block_n,
        AHEAD=ahead,
        num_warps=warps,
        num_stages=2,
        launch_pdl=cuda.PDL,
    )
