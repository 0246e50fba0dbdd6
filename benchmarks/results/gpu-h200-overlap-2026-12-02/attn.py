"""Batch-1 decode graph, timed whole, over decode-attention partition sizes and tiles, at
several context lengths (the step's K/V contents do not matter for time)."""

import os
import sys

import torch
import triton

sys.path.insert(0, "benchmarks")
import bench_gpu as B  # noqa: E402

import engine.cuda.decode_attention as A  # noqa: E402
import engine.cuda.forward as F  # noqa: E402
from engine import Engine, EngineConfig, SamplingParams, dummy_checkpoint  # noqa: E402
from engine.cuda.graphs import DecodeGraphs  # noqa: E402

shape = os.environ.get("SHAPE", "llama3.2-1b")
c = B.SHAPES[shape]
ckpt = dummy_checkpoint(c, seed=0, device="cuda", dtype=torch.bfloat16)
engine = Engine(
    ckpt,
    EngineConfig(
        device="cuda", kv_cache_bytes=8 << 30, max_num_seqs=1, max_num_batched_tokens=8192, max_model_len=4096
    ),
)
engine.generate([B.rand_prompt(150, 1)], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
g = engine.runner.graphs
width = g.tables.shape[1]
base = F.decode_attention


def make(part, block_n, warps, stages):
    def attn(q, k_cache, v_cache, block_tables, context_lens, scale, out):
        b, h, d = q.shape
        _, bs, kvh, _ = k_cache.shape
        num_parts = triton.cdiv(block_tables.shape[1] * bs, part)
        m = torch.empty((b, h, num_parts), dtype=torch.float32, device=q.device)
        l = torch.empty_like(m)
        acc = torch.empty((b, h, num_parts, d), dtype=torch.float32, device=q.device)
        A._decode_kernel[(b, kvh, num_parts)](
            q,
            k_cache,
            v_cache,
            block_tables,
            context_lens,
            m,
            l,
            acc,
            A._counter_buffer(q.device, b * kvh),
            out,
            scale,
            block_tables.stride(0),
            num_parts,
            G=h // kvh,
            GP=max(16, triton.next_power_of_2(h // kvh)),
            KVH=kvh,
            D=d,
            BS=bs,
            PART=part,
            BLOCK_N=block_n,
            num_warps=warps,
            num_stages=stages,
            launch_pdl=True,
        )

    return attn


variants = {"committed": None}
for part in (64, 128, 256, 512):
    for bn, w in ((64, 4), (32, 4), (32, 2), (128, 4)):
        if bn <= part:
            variants[f"part {part} block {bn} warps {w}"] = make(part, bn, w, 2)
graphs = {}
for name, fn in variants.items():
    F.decode_attention = fn or base
    try:
        gr = DecodeGraphs(engine.model, engine.kv, 1, width)
    finally:
        F.decode_attention = base
    gr.buf.copy_(g.buf[:, :1])
    graphs[name] = gr
blocks = engine.kv.k.shape[1]
for ctx in (190, 1000, 4000):
    for gr in graphs.values():
        gr.buf[3, 0] = ctx
        gr.buf[1, 0] = ctx - 1
        gr.tables[0] = torch.arange(width, device="cuda", dtype=torch.int32) % blocks
    ts = {k: [] for k in graphs}
    for r in range(5):
        for k in list(graphs) if r % 2 == 0 else list(reversed(graphs)):
            ts[k].append(B.cuda_time(graphs[k].graphs[1].replay, 60))
    med = sorted(((sorted(v)[2], k) for k, v in ts.items()))
    print(
        f"{shape} context {ctx}: committed {sorted(ts['committed'])[2] * 1e6:.1f} us; "
        + ", ".join(f"{k} {t * 1e6:.1f}" for t, k in med[:8]),
        flush=True,
    )
engine.shutdown()
