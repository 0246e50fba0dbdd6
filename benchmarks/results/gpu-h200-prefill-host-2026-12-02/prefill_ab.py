"""The engine's 8B-shape prefill (16 fresh prompts of 2,048 tokens, 8,192-token steps) in one
process, rounds interleaved in turned orders (the GPU's clocks depend on what ran just before):
RoPE + store as before (rope_old.py) or as committed; with the host's time around and between
steps. (prefill-ab.log also has a third variant, attention of prompts of 1,024 tokens or more
through cuDNN, one call per prompt, and the cost of cuDNN's first call at a new prompt length:
that path was dropped, and with it its lines here. README.md says why.)

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-prefill-host-2026-12-02/prefill_ab.py [rounds]
"""

import os
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..")]
import bench_gpu as B  # noqa: E402
import rope_old  # noqa: E402
from common import prefill_engine, timed  # noqa: E402

import engine.cuda.linear as L  # noqa: E402
import engine.engine as E  # noqa: E402
from engine import SamplingParams  # noqa: E402

SHAPE = os.environ.get("SHAPE", "llama3-8b")
c = B.SHAPES[SHAPE]
bw, peak = B.ceilings()
print(f"{SHAPE}: bf16 matmul 8192^3 {peak / 1e12:.0f} TFLOP/s", flush=True)
# The step's projections alone at 8,192 rows (cuBLAS, as the engine calls it: x @ w.T)
x = torch.randn(8192, c.intermediate_size, device="cuda", dtype=torch.bfloat16)
for name, n, k in (
    ("qkv", (c.num_heads + 2 * c.num_kv_heads) * c.head_dim, c.hidden_size),
    ("o", c.hidden_size, c.num_heads * c.head_dim),
    ("gate_up", 2 * c.intermediate_size, c.hidden_size),
    ("down", c.hidden_size, c.intermediate_size),
):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    a = x[:, :k].contiguous()
    t = B.cuda_time(lambda a=a, w=w: a @ w.T, 50)
    print(f"  {name} 8192 x {n} x {k}: {2 * 8192 * n * k / t / 1e12:.0f} TFLOP/s", flush=True)
    del w, a
del x
engine = prefill_engine(c)
n_p, len_p = 16, 2048
flops = B.prefill_flops(c, n_p, len_p)

marks: dict[str, list[float]] = {}
engine.runner.run = timed(marks, "run", engine.runner.run)
E.sample = timed(marks, "sample", E.sample)
new_rope = L.rope_and_store
variants = {"before (old RoPE, Triton)": rope_old.rope_and_store, "new RoPE, Triton": new_rope}
seed = iter(range(100_000, 10_000_000, n_p))
for rope in variants.values():  # warm up every variant
    L.rope_and_store = rope
    engine.generate(
        [B.rand_prompt(len_p, next(seed) + i) for i in range(4)], SamplingParams(temperature=0, max_tokens=1)
    )
results: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in variants}
names = list(variants)
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4):
    for name in names if r % 2 == 0 else names[::-1]:
        L.rope_and_store = variants[name]
        prompts = [B.rand_prompt(len_p, next(seed) + i) for i in range(n_p)]
        marks.clear()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=1))
        t1 = time.perf_counter()
        assert all(o.usage.cached_tokens == 0 for o in outs)
        # host time before the first step's launch, and after the last step's tokens reached the host
        before = marks["run at"][0] - t0
        after = t1 - (marks["sample at"][-1] + marks["sample"][-1])
        host_between = sum(
            marks["run at"][i + 1] - (marks["sample at"][i] + marks["sample"][i]) for i in range(len(marks["run"]) - 1)
        )
        results[name].append((t1 - t0, before, host_between, after))
for name, rs in results.items():
    wall = sorted(r[0] for r in rs)[len(rs) // 2]
    print(
        f"{name}: {' '.join(f'{r[0] * 1e3:.1f}' for r in rs)} ms -> median {flops / wall / 1e12:.0f} TFLOP/s = "
        f"{flops / wall / peak:.1%} of the measured matmul; host before the first launch "
        f"{' '.join(f'{r[1] * 1e3:.1f}' for r in rs)} ms, from tokens to the next launch "
        f"{' '.join(f'{r[2] * 1e3:.1f}' for r in rs)} ms, after the last tokens {' '.join(f'{r[3] * 1e3:.1f}' for r in rs)} ms",
        flush=True,
    )
L.rope_and_store = new_rope
kernels = B.kernel_breakdown(
    lambda: engine.generate(
        [B.rand_prompt(len_p, next(seed) + i) for i in range(n_p)], SamplingParams(temperature=0, max_tokens=1)
    ),
    reps=1,
)
print(f"committed, by kernel: {sum(us for _, (_, us) in kernels) / 1e3:.1f} ms of kernels", flush=True)
for kname, (calls, us) in kernels[:14]:
    print(f"  {us / 1e3:8.1f} ms  {calls:4d} calls  {kname[:100]}", flush=True)
engine.shutdown()
