"""Where the rest of the 8B prefill goes: attention options for fresh prompts, the RoPE +
store kernel against the previous one, and the host's time between prefill steps.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-prefill-host-2026-12-02/probe.py
"""

# ruff: noqa: B023 (each closure runs inside the iteration that defines it)

import inspect
import os
import sys
import time

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..")]
import bench_gpu as B  # noqa: E402
import rope_old  # noqa: E402
from common import prefill_engine, timed, timeit  # noqa: E402

import engine.cuda.rope_store as rope_new  # noqa: E402
from engine.cuda.prefill_attention import prefill_attention  # noqa: E402

dev = "cuda"
print(torch.__version__, torch.version.cuda, "cudnn", torch.backends.cudnn.version(), flush=True)


if os.environ.get("ATTN", "1") == "1":
    # 1. Attention over fresh prompts.
    try:
        from torch.nn.attention.varlen import varlen_attn

        print("varlen_attn", inspect.signature(varlen_attn), flush=True)
    except ImportError as e:
        varlen_attn = None
        print("no varlen_attn", e)
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

    H, KVH, BS = 32, 8, 16
    for D in (128, 64):
        for n, L in ((4, 2048), (1, 8192)):
            T = n * L
            q = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
            k = torch.randn(T, KVH, D, device=dev, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            kc = k.view(T // BS, BS, KVH, D)
            vc = v.view(T // BS, BS, KVH, D)
            tables = torch.arange(T // BS, device=dev, dtype=torch.int32).view(n, L // BS)
            starts = torch.arange(0, T, L, device=dev, dtype=torch.int32)
            lens = torch.full((n,), L, device=dev, dtype=torch.int32)
            flops = 2 * 2 * n * L * (L + 1) / 2 * H * D
            ref = torch.empty_like(q)

            def triton_fn():
                prefill_attention(q, kc, vc, tables, starts, lens, lens, L, D**-0.5, ref)

            t = timeit(triton_fn)
            line = f"D={D} {n}x{L}: triton {flops / t / 1e12:.0f} TFLOP/s"
            qs = q.view(n, L, H, D).transpose(1, 2)
            ks = k.view(n, L, KVH, D).transpose(1, 2)
            vs = v.view(n, L, KVH, D).transpose(1, 2)
            want = ref.float()

            def err(o):
                return ((o.float() - want).abs().max() / want.abs().max()).item()

            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                for gqa in (True, False):
                    try:
                        kk, vv = (
                            (ks, vs) if gqa else (ks.repeat_interleave(H // KVH, 1), vs.repeat_interleave(H // KVH, 1))
                        )

                        def fn(kk=kk, vv=vv, gqa=gqa, backend=backend):
                            with sdpa_kernel(backend):
                                return F.scaled_dot_product_attention(qs, kk, vv, is_causal=True, enable_gqa=gqa)

                        t = timeit(fn)
                        o = fn().transpose(1, 2).reshape(T, H, D)
                        line += f" | {name} gqa={gqa} {flops / t / 1e12:.0f} err {err(o):.1e}"
                    except Exception as e:
                        line += f" | {name} gqa={gqa} {type(e).__name__}: {str(e)[:80]}"
            if varlen_attn is not None:
                cu = torch.arange(0, T + 1, L, device=dev, dtype=torch.int32)
                try:

                    def vfn():
                        return varlen_attn(q, k, v, cu, cu, L, L, is_causal=True)

                    t = timeit(vfn)
                    line += f" | varlen {flops / t / 1e12:.0f} err {err(vfn()):.1e}"
                except Exception as e:
                    line += f" | varlen {type(e).__name__}: {str(e)[:120]}"
            try:
                cu = torch.arange(0, T + 1, L, device=dev, dtype=torch.int32)

                def afn():
                    return torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, L, L, 0.0, True, False)[0]

                t = timeit(afn)
                line += f" | aten flash varlen {flops / t / 1e12:.0f} err {err(afn()):.1e}"
            except Exception as e:
                line += f" | aten flash varlen {type(e).__name__}: {str(e)[:120]}"
            print(line, flush=True)
            del q, k, v, kc, vc, ref

# 2. RoPE + store: the previous kernel against the new one at several token blocks.
c = B.SHAPES["llama3-8b"]
H, KVH, D = c.num_heads, c.num_kv_heads, c.head_dim
for T in (8192, 32, 128):
    qkv = torch.randn(T, (H + 2 * KVH) * D, device=dev, dtype=torch.bfloat16)
    pos = torch.randint(0, 4000, (T,), device=dev)
    cos = torch.randn(4096, D // 2, device=dev)
    sin = torch.randn(4096, D // 2, device=dev)
    slots = torch.randperm(T * 2, device=dev)[:T]
    slots[::7] = -1
    kcs = [torch.zeros(T * 2 // 16, 16, KVH, D, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    args = lambda i: (qkv, pos, cos, sin, slots, kcs[2 * i], kcs[2 * i + 1], H, KVH, D)  # noqa: E731
    t_old = timeit(lambda: rope_old.rope_and_store(*args(0)), 50)
    q_old = rope_old.rope_and_store(*args(0))
    line = f"rope T={T}: old {t_old * 1e6:.1f} us"
    base = rope_new.token_block
    for bt in (1, 2, 4, 8, 16, 32, 64):
        rope_new.token_block = lambda t, bt=bt: bt
        for kc in kcs[2:]:
            kc.zero_()
        t_new = timeit(lambda: rope_new.rope_and_store(*args(1)), 50)
        q_new = rope_new.rope_and_store(*args(1))
        same = torch.equal(q_old, q_new) and torch.equal(kcs[0], kcs[2]) and torch.equal(kcs[1], kcs[3])
        line += f" | bt {bt}: {t_new * 1e6:.1f} us {'same' if same else 'DIFFERENT'}"
    rope_new.token_block = base
    print(line, flush=True)
    print(f"  committed choice for T={T}: bt {base(T)}", flush=True)

# 3. The host between prefill steps: the engine's 8B prefill of 16 x 2048, timed by phase.
import engine.engine as E  # noqa: E402
from engine import SamplingParams  # noqa: E402

engine = prefill_engine(c)
spent: dict[str, list[float]] = {}
sch, run = engine.scheduler, engine.runner
sch.schedule = timed(spent, "schedule", sch.schedule)
sch.postprocess = timed(spent, "postprocess", sch.postprocess)
sch.share_computed = timed(spent, "share_computed", sch.share_computed)
E.flatten = timed(spent, "flatten", E.flatten)
run.prepare = timed(spent, "prepare", run.prepare)
run.run = timed(spent, "run (host: upload + launches)", run.run)
E.sample = timed(spent, "sample (waits for the GPU)", E.sample)
engine._notify = timed(spent, "notify", engine._notify)
n_p, len_p = 16, 2048
engine.generate([B.rand_prompt(len_p, 50_000 + i) for i in range(2)], SamplingParams(temperature=0, max_tokens=1))
for rep in range(3):
    spent.clear()
    prompts = [B.rand_prompt(len_p, 60_000 + 100 * rep + i) for i in range(n_p)]
    torch.cuda.synchronize()
    t = time.perf_counter()
    engine.generate(prompts, SamplingParams(temperature=0, max_tokens=1))
    wall = time.perf_counter() - t
    steps = list(engine.step_stats)[-len(spent["prepare"]) :]
    print(
        f"prefill {n_p} x {len_p}: {wall * 1e3:.1f} ms, {len(steps)} steps of "
        f"{' '.join(f'{s.duration_s * 1e3:.1f}' for s in steps)} ms",
        flush=True,
    )
    for name, ts in spent.items():
        if name.endswith(" at"):
            continue
        print(f"  {name:32s} {sum(ts) * 1e3:8.2f} ms over {len(ts)} calls", flush=True)

# The GPU's idle time inside one prefill: gaps between consecutive kernels.
from torch.profiler import ProfilerActivity, profile  # noqa: E402

prompts = [B.rand_prompt(len_p, 90_000 + i) for i in range(n_p)]
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    engine.generate(prompts, SamplingParams(temperature=0, max_tokens=1))
    torch.cuda.synchronize()
ks = sorted((e.time_range.start, e.time_range.end) for e in prof.events() if e.device_type.name == "CUDA")
gaps = [(b[0] - a[1]) for a, b in zip(ks, ks[1:])]
big = sorted(g for g in gaps if g > 20)
print(
    f"GPU span {(ks[-1][1] - ks[0][0]) / 1e3:.1f} ms, busy {sum(e - s for s, e in ks) / 1e3:.1f} ms, "
    f"gaps over 20 us: {len(big)} summing {sum(big) / 1e3:.1f} ms, largest {[round(g / 1e3, 2) for g in big[-8:]]} ms",
    flush=True,
)
engine.shutdown()
