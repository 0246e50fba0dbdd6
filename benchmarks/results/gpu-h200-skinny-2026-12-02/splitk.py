"""The best a Triton tensor-core kernel does on the Llama-3-8B decode projections at 32 and 128
rows, with the K axis split over programs (fp32 atomic adds into a zeroed output) so the narrow
matrices (QKV, output, down) get enough programs: no norm, SiLU·up or residual add fused, so it
bounds what a fused kernel of this form could reach. Against cuBLAS F.linear on the same inputs,
weights rotated over >= 400 MB, timed inside a CUDA graph.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-skinny-2026-12-02/splitk.py
"""

# ruff: noqa: B023 (each closure runs inside the iteration that defines it)

import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")]
import bench_gpu as B  # noqa: E402


@triton.jit
def _split_kernel(
    x_ptr, w_ptr, out_ptr, M, N, K, K_PER, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    nmask, mmask = cols < N, rows < M
    w_rows = w_ptr + cols[:, None].to(tl.int64) * K
    x_rows = x_ptr + rows[None, :].to(tl.int64) * K
    acc = tl.zeros((BLOCK_N, BLOCK_M), tl.float32)
    start = tl.program_id(1) * K_PER
    for k0 in range(start, start + K_PER, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        kmask = ks < K
        w = tl.load(w_rows + ks[None, :], mask=nmask[:, None] & kmask[None, :], other=0.0)
        x = tl.load(x_rows + ks[:, None], mask=kmask[:, None] & mmask[None, :], other=0.0)
        acc = tl.dot(w, x, acc)
    out = out_ptr + rows[None, :].to(tl.int64) * N + cols[:, None]
    tl.atomic_add(out, acc, mask=nmask[:, None] & mmask[None, :], sem="relaxed")


def split_linear(x, w, out, cfg):
    block_n, block_k, warps, stages, split = cfg
    m, k = x.shape
    n = w.shape[0]
    k_per = triton.cdiv(triton.cdiv(k, split), block_k) * block_k
    out.zero_()
    _split_kernel[(triton.cdiv(n, block_n), triton.cdiv(k, k_per))](
        x,
        w,
        out,
        m,
        n,
        k,
        k_per,
        BLOCK_M=max(16, triton.next_power_of_2(m)),
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        num_warps=warps,
        num_stages=stages,
    )


CONFIGS = [
    (bn, bk, 4, st, s) for bn, bk, st in [(64, 64, 6), (64, 128, 4), (128, 64, 4), (128, 64, 6)] for s in (1, 2, 4, 8)
]

c = B.LLAMA3_8B
h, q, kv, i = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
projections = {"qkv": (q + 2 * kv, h), "o": (h, q), "gate_up": (2 * i, h), "down": (h, i), "lm_head": (c.vocab_size, h)}
per_step = {"qkv": c.num_layers, "o": c.num_layers, "gate_up": c.num_layers, "down": c.num_layers, "lm_head": 1}
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
for rows in (32, 128):
    step_cublas = step_best = 0.0
    for name, (n, k) in projections.items():
        copies = max(2, -(-400_000_000 // (n * k * 2)))
        ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(rows, n, device="cuda", dtype=torch.float32)
        gb = n * k * 2 / 1e9
        tc = B.graph_time(lambda: [F.linear(x, w) for w in ws]) / copies
        times = {}
        for cfg in CONFIGS:
            try:
                times[cfg] = B.graph_time(lambda: [split_linear(x, w, y, cfg) for w in ws]) / copies
            except OutOfResources:
                pass
        ref = F.linear(x, ws[-1]).float()
        split_linear(x, ws[-1], y, min(times, key=times.get))
        err = ((y - ref).norm() / ref.norm()).item()
        best = min(times, key=times.get)
        step_cublas += per_step[name] * tc
        step_best += per_step[name] * times[best]
        print(
            f"rows {rows:>3} {name:<8} {n:>6}x{k:<6} cuBLAS {tc * 1e6:7.1f} us {gb / tc / 1e3:5.2f} TB/s | "
            f"best {best} {times[best] * 1e6:7.1f} us {gb / times[best] / 1e3:5.2f} TB/s (rel err {err:.1e})",
            flush=True,
        )
        print("    " + "  ".join(f"{cfg}:{gb / t / 1e3:.2f}" for cfg, t in times.items()), flush=True)
    print(
        f"rows {rows}: the step's projections (32 layers + LM head): cuBLAS {step_cublas * 1e3:.3f} ms, "
        f"best split kernel per matrix {step_best * 1e3:.3f} ms",
        flush=True,
    )
