"""cuDNN attention over several fresh prompts of any lengths in one call, against the Triton
prefill kernel, and the largest difference between the RoPE kernels.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-prefill-host-2026-12-02/probe_varlen.py
"""

# ruff: noqa: B023 (each closure runs inside the iteration that defines it)

import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..")]
import bench_gpu as B  # noqa: E402
import rope_old  # noqa: E402
from common import timeit  # noqa: E402

import engine.cuda.rope_store as rope_new  # noqa: E402
from engine.cuda.prefill_attention import prefill_attention  # noqa: E402

dev = "cuda"
print(torch.ops.aten._cudnn_attention_forward.default._schema)


H, KVH, BS = 32, 8, 16
for D in (128, 64):
    for lens_l in ([2048] * 4, [8192], [3000, 1000, 4000, 192], [100] * 40):
        n, T = len(lens_l), sum(lens_l)
        q = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(T, KVH, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        # the cache: every prompt's blocks in turn, the rows padded to whole blocks
        nb = sum(-(-L // BS) for L in lens_l)
        kc = torch.zeros(nb, BS, KVH, D, device=dev, dtype=torch.bfloat16)
        vc = torch.zeros_like(kc)
        tables = torch.zeros(n, max(-(-L // BS) for L in lens_l), dtype=torch.int32, device=dev)
        b0, r0 = 0, 0
        for i, L in enumerate(lens_l):
            nbi = -(-L // BS)
            tables[i, :nbi] = torch.arange(b0, b0 + nbi, device=dev, dtype=torch.int32)
            kc.view(-1, KVH, D)[b0 * BS : b0 * BS + L] = k[r0 : r0 + L]
            vc.view(-1, KVH, D)[b0 * BS : b0 * BS + L] = v[r0 : r0 + L]
            b0, r0 = b0 + nbi, r0 + L
        lens = torch.tensor(lens_l, device=dev, dtype=torch.int32)
        cu = torch.zeros(n + 1, device=dev, dtype=torch.int32)
        cu[1:] = lens.cumsum(0)
        flops = sum(2 * 2 * L * (L + 1) / 2 * H * D for L in lens_l)
        ref = torch.empty_like(q)

        def triton_fn():
            prefill_attention(q, kc, vc, tables, cu[:-1].contiguous(), lens, lens, max(lens_l), D**-0.5, ref)

        t = timeit(triton_fn)
        want = ref.float()
        line = f"D={D} {lens_l if n < 8 else f'{n} x {lens_l[0]}'}: triton {flops / t / 1e12:.0f} TFLOP/s"

        def err(o):
            return ((o.float() - want).abs().max() / want.abs().max()).item()

        def varlen(cu64=cu.to(torch.int64)):
            return torch.ops.aten._cudnn_attention_forward(
                q, k, v, None, cu64, cu64, max(lens_l), max(lens_l), False, 0.0, True, False, scale=D**-0.5
            )[0]

        def njt():
            qn = torch.nested.nested_tensor_from_jagged(q, cu.to(torch.int64)).transpose(1, 2)
            kn = torch.nested.nested_tensor_from_jagged(k, cu.to(torch.int64)).transpose(1, 2)
            vn = torch.nested.nested_tensor_from_jagged(v, cu.to(torch.int64)).transpose(1, 2)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                o = F.scaled_dot_product_attention(qn, kn, vn, is_causal=True, enable_gqa=True)
            return o.transpose(1, 2).values()

        def loop():
            out = torch.empty_like(q)
            r = 0
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                for L in lens_l:
                    qs = q[r : r + L].unsqueeze(0).transpose(1, 2)
                    ks = k[r : r + L].unsqueeze(0).transpose(1, 2)
                    vs = v[r : r + L].unsqueeze(0).transpose(1, 2)
                    o = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, enable_gqa=True)
                    out[r : r + L] = o[0].transpose(0, 1)
                    r += L
            return out

        def gathered():
            # K/V read back from the cache by slot, as the engine would have them
            slots = (tables.long()[:, :, None] * BS + torch.arange(BS, device=dev)).view(n, -1)
            idx = torch.cat([slots[i, :L] for i, L in enumerate(lens_l)])
            kk = kc.view(-1, KVH, D).index_select(0, idx)
            vv = vc.view(-1, KVH, D).index_select(0, idx)
            return torch.ops.aten._cudnn_attention_forward(
                q,
                kk,
                vv,
                None,
                cu.to(torch.int64),
                cu.to(torch.int64),
                max(lens_l),
                max(lens_l),
                False,
                0.0,
                True,
                False,
                scale=D**-0.5,
            )[0]

        for name, fn in (("cudnn varlen", varlen), ("cudnn varlen + gather", gathered), ("njt", njt), ("loop", loop)):
            try:
                t = timeit(fn)
                o = fn()
                line += (
                    f" | {name} {flops / t / 1e12:.0f} err {err(o):.1e} {tuple(o.shape)} contiguous {o.is_contiguous()}"
                )
            except Exception as e:
                line += f" | {name} {type(e).__name__}: {str(e)[:160]}"
        print(line, flush=True)

# RoPE: the largest difference between the kernels
c = B.SHAPES["llama3-8b"]
H, KVH, D = c.num_heads, c.num_kv_heads, c.head_dim
T = 8192
qkv = torch.randn(T, (H + 2 * KVH) * D, device=dev, dtype=torch.bfloat16)
pos = torch.randint(0, 4000, (T,), device=dev)
cos, sin = torch.randn(4096, D // 2, device=dev), torch.randn(4096, D // 2, device=dev)
slots = torch.randperm(T * 2, device=dev)[:T]
slots[::7] = -1
caches = [torch.zeros(T * 2 // 16, 16, KVH, D, device=dev, dtype=torch.bfloat16) for _ in range(4)]
q0 = rope_old.rope_and_store(qkv, pos, cos, sin, slots, caches[0], caches[1], H, KVH, D)
q1 = rope_new.rope_and_store(qkv, pos, cos, sin, slots, caches[2], caches[3], H, KVH, D)
for name, a, b in (("q", q0, q1), ("k", caches[0], caches[2]), ("v", caches[1], caches[3])):
    d = (a.float() - b.float()).abs()
    print(f"rope {name}: max diff {d.max().item():.3g}, differing {int((d > 0).sum())} of {d.numel()}", flush=True)
