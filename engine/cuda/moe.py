"""A mixture of experts on the GPU with the routing on the device: route, sort, two grouped kernels, combine.

    route     the router's logits (at decode the fused matrix-vector kernel, else cuBLAS), then one kernel
              per row: softmax, top k, renormalised
    sort      the T × top_k (token, expert) pairs ordered by expert, stably: one kernel that counts each
              pair's place (pairs <= SORT_MAX_PAIRS: a decode step), else torch.sort
    gate/up   a[p] = SiLU(x[token(p)] @ gate[e].T) * (x[token(p)] @ up[e].T)      (pairs, I), sorted order
    down      y[pair(p)] = weight(p) * (a[p] @ down[e].T)                          (pairs, hidden) float32
    combine   x[t] += the sum of y over the token's top_k pairs, in slot order

A step of many pairs (a prefill chunk) whose widths are multiples of 16 takes CUTLASS's grouped GEMM
instead (`torch._grouped_mm`, Hopper and later): the pairs gathered in expert order, gate/up and down as
one grouped product each, the weighted rows added back per token in float32.

Each run of pairs that chose one expert is cut into chunks of BLOCK_M rows. A program of the grid
(pairs, column tiles) whose pair starts a chunk computes that chunk's tile against its expert's
weights; every other program exits at once. So each chosen expert's weights are read once per chunk
(once at decode, where a chunk holds every token that chose it), nothing is read for experts no token
chose, and no host learns which were chosen: a decode step with experts is a CUDA graph.

One row (a batch-1 decode step) takes three kernels instead, each a programmatic dependent launch
(experts_add_decode): the router's float32 logits with the RMSNorm in the matrix-vector kernel; gate/up,
a grid of (top_k slots, column tiles) whose programs each pick their slot's expert from the logits and
normalise the row as they read it, writing SiLU(gate)·up per slot; down, programs per tile of hidden
columns each summing a part of the slots' products in slot order, the last part to finish adding the
parts in part order into the stream in place (split.py: no atomics on the sums, the same bits whichever
finishes last), each having found its experts and requested its first weights before waiting for the
gate/up kernel.

engine/moe.py is the reference (the CPU path): the same routing, the experts one at a time.
"""

import math

import torch
import triton
import triton.language as tl

from engine import cuda
from engine.cuda.linear import GEMV_MAX_ROWS, gemv
from engine.cuda.pdl import pdl_launch_dependents, pdl_wait
from engine.cuda.split import counters, last_to_arrive

BLOCK_M = 16  # the smallest tl.dot: a decode chunk is mostly padding, which costs no weight reads
SORT_MAX_PAIRS = 512  # the counting sort compares every pair with every other, in one program
# The router's few rows (128 experts) over many programs: 2 rows a program, each whole row one tile,
# read before the wait (bench_gpu.py --moe-tiles on an H100: 1,697 against 1,717 us a batch-1 step
# with 2 tiles a row).
ROUTER_GEMV = (2, 2048, 8, 1)


@triton.jit
def _route_kernel(
    logits_ptr, ids_ptr, weights_ptr, E, TOP_K: tl.constexpr, BLOCK_K: tl.constexpr, RENORM: tl.constexpr,
    BLOCK_E: tl.constexpr,
):  # fmt: skip
    """One row: softmax over the experts' logits, the top k (the first of equal ones), renormalised."""
    row = tl.program_id(0)
    es = tl.arange(0, BLOCK_E)
    x = tl.load(logits_ptr + row * E + es, mask=es < E, other=-float("inf")).to(tl.float32)
    p = tl.exp(x - tl.max(x, 0))
    p = p / tl.sum(p, 0)
    js = tl.arange(0, BLOCK_K)
    chosen = tl.zeros((BLOCK_K,), dtype=tl.int32)
    weight = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for j in tl.static_range(TOP_K):
        best = tl.max(p, 0)
        idx = tl.min(tl.where(p == best, es, BLOCK_E), 0)
        chosen = tl.where(js == j, idx, chosen)
        weight = tl.where(js == j, best, weight)
        p = tl.where(es == idx, -1.0, p)
    if RENORM:
        weight = weight / tl.sum(weight, 0)
    tl.store(ids_ptr + row * TOP_K + js, chosen, mask=js < TOP_K)
    tl.store(weights_ptr + row * TOP_K + js, weight, mask=js < TOP_K)


@triton.jit
def _count_sort_kernel(
    ids_ptr,
    weights_ptr,
    sorted_ptr,
    starts_ptr,
    order_ptr,
    scale_ptr,
    pairs,
    BLOCK_P: tl.constexpr,
    CHUNK: tl.constexpr,
):
    """Each pair's place in the stable order by expert: the pairs of a smaller expert, and the earlier
    pairs of its own, counted; where its expert's run starts: the pairs of a smaller expert."""
    ps = tl.arange(0, BLOCK_P)
    ok = ps < pairs
    mine = tl.load(ids_ptr + ps, mask=ok, other=0)
    place = tl.zeros((BLOCK_P,), dtype=tl.int32)
    start = tl.zeros((BLOCK_P,), dtype=tl.int32)
    for q0 in range(0, pairs, CHUNK):
        qs = q0 + tl.arange(0, CHUNK)
        theirs = tl.load(ids_ptr + qs, mask=qs < pairs, other=2**30)
        less = theirs[None, :] < mine[:, None]
        before = (theirs[None, :] == mine[:, None]) & (qs[None, :] < ps[:, None])
        place += tl.sum((less | before).to(tl.int32), 1)
        start += tl.sum(less.to(tl.int32), 1)
    tl.store(sorted_ptr + place, mine, mask=ok)
    tl.store(starts_ptr + place, start, mask=ok)
    tl.store(order_ptr + place, ps, mask=ok)
    tl.store(scale_ptr + place, tl.load(weights_ptr + ps, mask=ok, other=0.0), mask=ok)


@triton.jit
def _grouped_kernel(
    x_ptr,  # gate/up: the normalised stream (T, K); down: a, (pairs, K) in sorted order
    w_ptr,  # (experts, N_total, K)
    out_ptr,  # gate/up: a, (pairs, N) in sorted order; down: y, (pairs, N) in pair order
    sorted_ptr,  # (pairs,) expert of each sorted pair
    starts_ptr,  # (pairs,) where each sorted pair's expert run starts
    order_ptr,  # (pairs,) the pair (token * top_k + slot) at each sorted place
    scale_ptr,  # (pairs,) routing weight of each sorted pair (down)
    pairs,
    N,
    K,
    top_k,
    stride_x,
    stride_we,
    stride_wn,
    stride_o,
    GATED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    p = tl.program_id(0)
    start = tl.load(starts_ptr + p)
    if (p - start) % BLOCK_M != 0:
        return
    expert = tl.load(sorted_ptr + p)
    rows = p + tl.arange(0, BLOCK_M)
    valid = rows < pairs
    valid &= tl.load(sorted_ptr + rows, mask=valid, other=-1) == expert
    pair = tl.load(order_ptr + rows, mask=valid, other=0)
    x_rows = pair // top_k if GATED else rows  # the stream's row of each pair's token; a is sorted already
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    w_base = w_ptr + expert.to(tl.int64) * stride_we
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        x = tl.load(
            x_ptr + x_rows.to(tl.int64)[:, None] * stride_x + ks[None, :],
            mask=valid[:, None] & k_ok[None, :],
            other=0.0,
        )
        w = tl.load(w_base + cols[:, None] * stride_wn + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
        if GATED:  # the up rows sit N rows below the gate rows
            u = tl.load(
                w_base + (cols + N)[:, None] * stride_wn + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0
            )
            acc_up = tl.dot(x, tl.trans(u), acc_up)
    if GATED:
        acc = acc / (1.0 + tl.exp(-acc)) * acc_up
        out_rows = rows
    else:
        acc *= tl.load(scale_ptr + rows, mask=valid, other=0.0)[:, None]
        out_rows = pair
    out = out_ptr + out_rows.to(tl.int64)[:, None] * stride_o + cols[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=valid[:, None] & col_ok[None, :])


@triton.jit
def _combine_kernel(y_ptr, x_ptr, H, TOP_K: tl.constexpr, BLOCK: tl.constexpr):
    """x[t] += y[t, 0] + ... + y[t, k-1], in float32, in place."""
    t = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < H
    acc = tl.load(x_ptr + t * H + cols, mask=ok, other=0.0).to(tl.float32)
    for j in tl.static_range(TOP_K):
        acc += tl.load(y_ptr + (t * TOP_K + j) * H + cols, mask=ok, other=0.0)
    tl.store(x_ptr + t * H + cols, acc.to(x_ptr.dtype.element_ty), mask=ok)


# Tiles by how many pairs a step has: few (decode) want narrow ones, so every multiprocessor has work.
# (block_n, block_k, warps, stages) for gate/up and for down.
FEW_PAIRS = 64
TILES = {"few": ((16, 256, 4, 3), (64, 128, 4, 4)), "many": ((32, 128, 4, 4), (32, 128, 4, 4))}


def _grouped(x, w, out, sorted_ids, starts, order, scale, top_k: int, gated: bool, tile) -> None:
    block_n, block_k, warps, stages = tile
    pairs, n = starts.shape[0], out.shape[1]
    _grouped_kernel[(pairs, triton.cdiv(n, block_n))](
        x, w, out, sorted_ids, starts, order, scale, pairs, n, w.shape[2], top_k,
        x.stride(0), w.stride(0), w.stride(1), out.stride(0),
        GATED=gated, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def route(h: torch.Tensor, router: torch.Tensor, top_k: int, renormalise: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """engine/moe.py's route: (T, top_k) expert ids (int32) and weights (float32)."""
    t, experts = h.shape[0], router.shape[0]
    if t <= GEMV_MAX_ROWS:  # one kernel, where a cast and cuBLAS's dot product took two
        logits = torch.empty((t, experts), dtype=torch.float32, device=h.device)
        if t:
            gemv(h, router, logits, config=ROUTER_GEMV)
    else:
        logits = (h.float() @ router.t()).contiguous()
    ids = torch.empty((t, top_k), dtype=torch.int32, device=h.device)
    weights = torch.empty((t, top_k), dtype=torch.float32, device=h.device)
    block = triton.next_power_of_2(experts)
    _route_kernel[(t,)](
        logits, ids, weights, experts,
        TOP_K=top_k, BLOCK_K=triton.next_power_of_2(top_k), RENORM=renormalise, BLOCK_E=block, num_warps=4,
    )  # fmt: skip
    return ids, weights


def sort_pairs(ids: torch.Tensor, weights: torch.Tensor):
    """The pairs by expert, stably: each place's expert, where its run starts, its pair, its weight."""
    flat, w = ids.reshape(-1), weights.reshape(-1)
    pairs = flat.shape[0]
    if pairs <= SORT_MAX_PAIRS:
        sorted_ids, starts, order = (torch.empty(pairs, dtype=torch.int32, device=ids.device) for _ in range(3))
        scale = torch.empty(pairs, dtype=torch.float32, device=ids.device)
        block = max(16, triton.next_power_of_2(pairs))
        _count_sort_kernel[(1,)](flat, w, sorted_ids, starts, order, scale, pairs, BLOCK_P=block, CHUNK=16)
        return sorted_ids, starts, order, scale
    sorted_ids, order = torch.sort(flat, stable=True)
    starts = torch.searchsorted(sorted_ids, sorted_ids).to(torch.int32)
    return sorted_ids, starts, order.to(torch.int32), w.index_select(0, order)


# Below it, the Triton kernels: their 16-row chunks re-read few weights. A decode graph of 128 Qwen3-30B-A3B
# rows is 1,024 pairs, which the Triton kernels step faster (benchmarks/results/moe-capture-h100-2026-12-07d/).
GROUPED_MM_MIN_PAIRS = 2048


def grouped_mm_fits(pairs: int, gate_up: torch.Tensor, down: torch.Tensor) -> bool:
    return (
        pairs >= GROUPED_MM_MIN_PAIRS
        and hasattr(torch, "_grouped_mm")
        and torch.cuda.get_device_capability(gate_up.device)[0] >= 9
        and all(n % 16 == 0 for n in (*gate_up.shape[1:], *down.shape[1:]))
    )


def _experts_grouped_mm(x, h, gate_up, down, ids, weights) -> None:
    top_k, inter = ids.shape[1], down.shape[2]
    flat = ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    tokens = order // top_k
    # Counted on the device (torch.bincount asks the host for the largest id), so that a CUDA graph (a decode
    # step of GROUPED_MM_MIN_PAIRS pairs or more) captures it.
    counts = torch.zeros(gate_up.shape[0], dtype=torch.int32, device=flat.device)
    counts.scatter_add_(0, flat.long(), torch.ones_like(flat, dtype=torch.int32))
    ends = torch.cumsum(counts, 0, dtype=torch.int32)
    gu = torch._grouped_mm(h.index_select(0, tokens), gate_up.transpose(1, 2), offs=ends)
    a = (torch.nn.functional.silu(gu[:, :inter].float()) * gu[:, inter:].float()).to(h.dtype)
    y = torch._grouped_mm(a, down.transpose(1, 2), offs=ends).float() * weights.reshape(-1)[order, None]
    acc = x.float().index_add_(0, tokens, y)
    x.copy_(acc)


def experts_add(
    x: torch.Tensor,  # (T, hidden): the residual stream the experts' output is added into
    h: torch.Tensor,  # (T, hidden): x normalised
    router: torch.Tensor,  # (experts, hidden) float32
    gate_up: torch.Tensor,  # (experts, 2 * I, hidden)
    down: torch.Tensor,  # (experts, hidden, I)
    top_k: int,
    renormalise: bool,
) -> None:
    ids, weights = route(h, router, top_k, renormalise)
    if grouped_mm_fits(ids.numel(), gate_up, down):
        _experts_grouped_mm(x, h, gate_up, down, ids, weights)
        return
    sorted_ids, starts, order, scale = sort_pairs(ids, weights)
    t, hidden, inter = h.shape[0], down.shape[1], down.shape[2]
    pairs = t * top_k
    up_tile, down_tile = TILES["few" if pairs <= FEW_PAIRS else "many"]
    a = torch.empty((pairs, inter), dtype=h.dtype, device=h.device)
    _grouped(h, gate_up, a, sorted_ids, starts, order, scale, top_k, True, up_tile)
    y = torch.empty((pairs, hidden), dtype=torch.float32, device=h.device)
    _grouped(a, down, y, sorted_ids, starts, order, scale, top_k, False, down_tile)
    block = 1024
    _combine_kernel[(t, triton.cdiv(hidden, block))](y, x, hidden, TOP_K=top_k, BLOCK=block, num_warps=4)


# ---------------------------------------------------------------- one row (a batch-1 decode step): three kernels

# (block_n, block_k, warps) of the gate/up kernel (grid: top_k slots x I / block_n), and (block_n, block_k,
# warps, parts) of the down kernel (grid: hidden / block_n x parts, each part top_k / parts slots; parts
# that do not divide top_k are cut to a divisor). In the batch-1 step of 24 Qwen3-30B-A3B layers on an
# H100 (bench_gpu.py --moe-tiles, each setting in a graph of its own), down in 4 parts took 1,697 us
# against 1,867 in one (128 programs, one tile in flight each, were too few to stream the weights),
# gate/up 128 columns a tile 1,674 against 1,763 with 256; gate/up split over the hidden columns the
# same way was slower (1,870 in 2 parts, 2,140 in 4): benchmarks/results/moe-split-h100-2026-12-07/.
DECODE_TILES = ((16, 128, 4), (16, 256, 4, 4))
RANK_CHUNK = 32  # the experts compared with every expert at once when ranking them


@triton.jit
def _softmax(logits_ptr, E, BLOCK_E: tl.constexpr):
    """The row's softmax p over the experts' logits (past E: zero), with its max and sum. The logits are
    read from L2 (.cg), never from a multiprocessor's L1: the down kernel reads them before its wait (see
    experts_add_decode)."""
    es = tl.arange(0, BLOCK_E)
    x = tl.load(logits_ptr + es, mask=es < E, other=-float("inf"), cache_modifier=".cg")
    top = tl.max(x, 0)
    total = tl.sum(tl.exp(x - top), 0)
    return es, tl.exp(x - top) / total, top, total


@triton.jit
def _ranks(logits_ptr, E, BLOCK_E: tl.constexpr, CHUNK: tl.constexpr):
    """The softmax p and each expert's place when sorted by p, larger first, the first of equal ones
    first: the order _route_kernel picks them in."""
    es, p, top, total = _softmax(logits_ptr, E, BLOCK_E)
    rank = tl.zeros((BLOCK_E,), dtype=tl.int32)
    for f0 in tl.static_range(0, BLOCK_E, CHUNK):
        fs = f0 + tl.arange(0, CHUNK)
        pf = tl.exp(tl.load(logits_ptr + fs, mask=fs < E, other=-float("inf"), cache_modifier=".cg") - top) / total
        ahead = (pf[None, :] > p[:, None]) | ((pf[None, :] == p[:, None]) & (fs[None, :] < es[:, None]))
        rank += tl.sum(ahead.to(tl.int32), 1)
    return es, p, rank


@triton.jit
def _slot_expert(logits_ptr, E, slot, BLOCK_E: tl.constexpr):
    """The expert at place `slot` in _ranks's order, picked as _route_kernel picks: the largest p, the
    first of equal ones, slot + 1 times. Two reductions a place where ranking every expert compares
    all pairs, on the gate/up kernel's critical path (with its ranking skipped the H100 step was 3 us a
    layer shorter: benchmarks/results/moe-l2-h100-2026-12-07b/)."""
    es, p, _, _ = _softmax(logits_ptr, E, BLOCK_E)
    expert = 0
    for _ in range(slot + 1):
        expert = tl.min(tl.where(p == tl.max(p, 0), es, BLOCK_E), 0)
        p = tl.where(es == expert, -1.0, p)
    return expert


@triton.jit
def _decode_up_kernel(
    x_ptr,  # (hidden,) the residual stream
    g_ptr,  # (hidden,) the MLP's RMSNorm weight
    logits_ptr,  # (E,) float32, the router's
    w_ptr,  # (E, 2 * I, hidden) gate rows, then up rows
    a_ptr,  # (top_k, I) float32: SiLU(gate) * up of each slot's expert
    E,
    N,  # I
    K,  # hidden
    eps,
    BLOCK_E: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """Program (slot, tile): the slot's expert from the logits, then its gate and up rows of the tile
    against the normalised stream (normalised as linear.py's kernel does: x * g, then 1/rms at the end)."""
    slot = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    ks = tl.arange(0, BLOCK_K)
    pdl_wait()
    # After the wait: the router's logits are complete when the down kernel starts (it reads them early).
    pdl_launch_dependents()
    expert = _slot_expert(logits_ptr, E, slot, BLOCK_E)
    gate_rows = w_ptr + (expert.to(tl.int64) * 2 * N + cols)[:, None] * K
    up_rows = gate_rows + N * K
    acc_g = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    acc_u = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    sq = tl.zeros((BLOCK_K,), tl.float32)
    wmask = cmask[:, None] & (ks < K)[None, :]
    g_next = tl.load(gate_rows + ks[None, :], mask=wmask, other=0.0)
    u_next = tl.load(up_rows + ks[None, :], mask=wmask, other=0.0)
    x_next = tl.load(x_ptr + ks, mask=ks < K, other=0.0)
    for k0 in range(0, K, BLOCK_K):  # each tile and chunk of x requested one step ahead of its use
        g, u, x = g_next, u_next, x_next.to(tl.float32)
        nks = k0 + BLOCK_K + ks
        nmask = cmask[:, None] & (nks < K)[None, :]
        g_next = tl.load(gate_rows + nks[None, :], mask=nmask, other=0.0)
        u_next = tl.load(up_rows + nks[None, :], mask=nmask, other=0.0)
        x_next = tl.load(x_ptr + nks, mask=nks < K, other=0.0)
        sq += x * x
        x *= tl.load(g_ptr + k0 + ks, mask=k0 + ks < K, other=0.0).to(tl.float32)
        acc_g += g.to(tl.float32) * x[None, :]
        acc_u += u.to(tl.float32) * x[None, :]
    inv_rms = 1.0 / tl.sqrt(tl.sum(sq, 0) / K + eps)
    gate = tl.sum(acc_g, 1) * inv_rms
    up = tl.sum(acc_u, 1) * inv_rms
    tl.store(a_ptr + slot * N + cols, gate / (1.0 + tl.exp(-gate)) * up, mask=cmask)


@triton.jit
def _decode_down_kernel(
    x_ptr,  # (hidden,) the residual stream: the experts' sum is added in place
    logits_ptr,  # (E,) float32
    a_ptr,  # (top_k, I) float32, from the gate/up kernel
    w_ptr,  # (E, hidden, I)
    part_ptr,  # (SPLIT, hidden) float32: each part's sum, where SPLIT > 1
    count_ptr,  # (hidden / BLOCK_N,) int32 counters at zero (split.py), where SPLIT > 1
    E,
    N,  # hidden
    K,  # I
    TOP_K: tl.constexpr,
    RENORM: tl.constexpr,
    BLOCK_E: tl.constexpr,
    CHUNK: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT: tl.constexpr,
):
    """Program (tile, part): the part's TOP_K / SPLIT slots of weight_j * (a[j] @ down[e_j][tile].T), in
    slot order; x[tile] += the parts' sums in part order, by the last part to finish (split.py). The
    experts and weights come from the logits and the first weight tile is requested before the wait:
    only a is the gate/up kernel's."""
    pdl_launch_dependents()
    tile = tl.program_id(0)
    SLOTS: tl.constexpr = TOP_K // SPLIT
    first = tl.program_id(1) * SLOTS
    rows = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    rmask = rows < N
    ks = tl.arange(0, BLOCK_K)
    es, p, rank = _ranks(logits_ptr, E, BLOCK_E, CHUNK)
    total = 1.0
    if RENORM:
        total = tl.sum(tl.where(rank < TOP_K, p, 0.0), 0)
    w_rows = w_ptr + rows.to(tl.int64)[:, None] * K  # (BLOCK_N, 1): the tile's rows in any expert
    expert = tl.sum(tl.where(rank == first, es, 0), 0)
    w_at = expert.to(tl.int64) * N * K  # where the slot's expert's weights start
    w_next = tl.load(w_rows + w_at + ks[None, :], mask=rmask[:, None] & (ks < K)[None, :], other=0.0)
    pdl_wait()
    a_next = tl.load(a_ptr + first * K + ks, mask=ks < K, other=0.0)
    acc = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    for i in tl.static_range(SLOTS):
        j = first + i
        weight = tl.sum(tl.where(rank == j, p, 0.0), 0) / total
        after = tl.sum(tl.where(rank == j + 1, es, 0), 0)  # the next slot's expert (unused after the part's last)
        after_at = after.to(tl.int64) * N * K
        for k0 in range(0, K, BLOCK_K):
            w = w_next
            # The next tile: this slot's, else the next slot's first. Chosen by scalars, so that the
            # compiler still sees each row's columns contiguous and aligned (16-byte loads).
            same = k0 + BLOCK_K < K
            nks = tl.where(same, k0 + BLOCK_K, 0) + ks
            kmask = nks < K
            if i + 1 == SLOTS:  # nothing after the part's last slot's last tile
                kmask = nks < tl.where(same, K, 0)
            nmask = rmask[:, None] & kmask[None, :]
            w_next = tl.load(w_rows + tl.where(same, w_at, after_at) + nks[None, :], mask=nmask, other=0.0)
            a = a_next * weight
            a_next = tl.load(a_ptr + tl.where(same, j, j + 1) * K + nks, mask=kmask, other=0.0)
            acc += w.to(tl.float32) * a[None, :]
        w_at = after_at
    y = tl.sum(acc, 1)
    adds = True  # one part adds its sum; of several, the last to finish adds theirs
    if SPLIT > 1:
        tl.store(part_ptr + tl.program_id(1) * N + rows, y, mask=rmask)
        adds = last_to_arrive(count_ptr + tile, SPLIT)
        if adds:
            y = tl.load(part_ptr + rows, mask=rmask, other=0.0, cache_modifier=".cg")
            for s in tl.static_range(1, SPLIT):
                y += tl.load(part_ptr + s * N + rows, mask=rmask, other=0.0, cache_modifier=".cg")
    if adds:
        y += tl.load(x_ptr + rows, mask=rmask, other=0.0).to(tl.float32)
        tl.store(x_ptr + rows, y.to(x_ptr.dtype.element_ty), mask=rmask)


def experts_add_decode(
    x: torch.Tensor,  # (1, hidden): the residual stream, not normalised; the experts' output is added in place
    norm: torch.Tensor,  # (hidden,) the MLP's RMSNorm weight
    eps: float,
    router: torch.Tensor,  # (experts, hidden) float32
    gate_up: torch.Tensor,  # (experts, 2 * I, hidden)
    down: torch.Tensor,  # (experts, hidden, I)
    top_k: int,
    renormalise: bool,
    tiles=None,
) -> None:
    """One row's mixture of experts in three kernels, each a programmatic dependent launch: the router's
    float32 logits of the normalised row (linear.py's kernel, the norm in it); gate/up, whose programs each
    route the row themselves from the 128 logits (512 bytes) and normalise it; down, summing the slots in
    order into the stream, in parts whose last adds them (split.py). The gate/up kernel lets the down
    kernel start only after its own wait, when the router kernel has ended: griddepcontrol.wait returns
    once the grids in front have completed with their writes performed, so the down kernel's programs,
    which all start later, read complete logits (from L2) and request their first weights before
    waiting for a."""
    experts, hidden = router.shape
    inter = down.shape[2]
    (up_n, up_k, up_warps), (down_n, down_k, down_warps, down_split) = tiles or DECODE_TILES
    down_split = math.gcd(down_split, top_k)
    logits = torch.empty((1, experts), dtype=torch.float32, device=x.device)
    gemv(x, router, logits, norm, eps, config=ROUTER_GEMV)
    a = torch.empty((top_k, inter), dtype=torch.float32, device=x.device)
    block_e = triton.next_power_of_2(experts)
    chunk = min(RANK_CHUNK, block_e)
    down_tiles = triton.cdiv(hidden, down_n)
    _decode_up_kernel[(top_k, triton.cdiv(inter, up_n))](
        x, norm, logits, gate_up, a, experts, inter, hidden, eps,
        BLOCK_E=block_e, BLOCK_N=up_n, BLOCK_K=up_k, num_warps=up_warps, launch_pdl=cuda.PDL,
    )  # fmt: skip
    parts = torch.empty((down_split, hidden), dtype=torch.float32, device=x.device) if down_split > 1 else a
    _decode_down_kernel[(down_tiles, down_split)](
        x, logits, a, down, parts, counters("experts", x.device, down_tiles), experts, hidden, inter,
        TOP_K=top_k, RENORM=renormalise, BLOCK_E=block_e, CHUNK=chunk, BLOCK_N=down_n, BLOCK_K=down_k,
        SPLIT=down_split, num_warps=down_warps, launch_pdl=cuda.PDL,
    )  # fmt: skip
