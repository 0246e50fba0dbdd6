"""What the scripts here share: an engine of one shape's dummy weights (SHAPE, default
llama3.2-1b) holding one sequence 190 tokens into its context, batch-1 decode graphs
captured afresh over that step, and a decode-attention launch at chosen partitions and tiles."""

import os
import sys

import torch
import triton

sys.path.insert(0, "benchmarks")
import bench_gpu as B  # noqa: E402

from engine import Engine, EngineConfig, SamplingParams, dummy_checkpoint  # noqa: E402
from engine.cuda.graphs import DecodeGraphs  # noqa: E402

SHAPE = os.environ.get("SHAPE", "llama3.2-1b")


def batch1_engine() -> Engine:
    ckpt = dummy_checkpoint(B.SHAPES[SHAPE], seed=0, device="cuda", dtype=torch.bfloat16)
    config = EngineConfig(
        device="cuda", kv_cache_bytes=8 << 30, max_num_seqs=1, max_num_batched_tokens=8192, max_model_len=4096
    )
    engine = Engine(ckpt, config)
    engine.generate([B.rand_prompt(150, 1)], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    return engine


def capture(engine: Engine) -> DecodeGraphs:
    """A fresh batch-1 graph (with whatever kernels and tiles are set now) over the engine's last step."""
    g = engine.runner.graphs
    gr = DecodeGraphs(engine.model, engine.kv, 1, g.tables.shape[1])
    gr.buf.copy_(g.buf[:, :1])
    gr.tables.copy_(g.tables[:1])
    return gr


def time_rounds(fns: dict, rounds: int = 5, reps: int = 60) -> dict:
    """Median seconds of each fn over rounds, the order reversed every other round."""
    ts: dict = {k: [] for k in fns}
    for r in range(rounds):
        for k in list(fns) if r % 2 == 0 else list(reversed(fns)):
            ts[k].append(B.cuda_time(fns[k], reps))
    return {k: sorted(v)[len(v) // 2] for k, v in ts.items()}


def decode_attention_at(module, block_n: int, warps: int, part: int | None = None, stages: int = 2, **constexprs):
    """A decode-attention function that launches a kernel module's `_decode_kernel` with the given
    tile and warps, partitions of `part` tokens (None: the module's own `partition_size`), and
    any further constexprs its kernel takes, such as AHEAD."""

    def attn(q, k_cache, v_cache, block_tables, context_lens, scale, out):
        b, h, d = q.shape
        _, bs, kvh, _ = k_cache.shape
        width = block_tables.shape[1]
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        p = part or module.partition_size(width * bs, b * kvh, sms)
        num_parts = triton.cdiv(width * bs, p)
        m = torch.empty((b, h, num_parts), dtype=torch.float32, device=q.device)
        acc = torch.empty((b, h, num_parts, d), dtype=torch.float32, device=q.device)
        module._decode_kernel[(b, kvh, num_parts)](
            q,
            k_cache,
            v_cache,
            block_tables,
            context_lens,
            m,
            torch.empty_like(m),
            acc,
            module._counter_buffer(q.device, b * kvh),
            out,
            scale,
            block_tables.stride(0),
            num_parts,
            G=h // kvh,
            GP=max(16, triton.next_power_of_2(h // kvh)),
            KVH=kvh,
            D=d,
            BS=bs,
            PART=p,
            BLOCK_N=block_n,
            num_warps=warps,
            num_stages=stages,
            launch_pdl=True,
            **constexprs,
        )

    return attn
