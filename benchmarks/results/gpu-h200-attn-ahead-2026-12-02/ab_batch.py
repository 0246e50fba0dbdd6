"""Decode graphs of 32 and 128 sequences (190 tokens of context each), timed whole, with
decode attention as committed before (decode_attention_old.py) and as committed after
(engine/cuda/decode_attention.py) with its first tile read before the wait (AHEAD) at two tiles:
the batch-1 one (256 tokens for head dim 64, 128 for 128, 8 warps) and the earlier one (128 / 64
tokens, 4 warps); "committed" is the module's own choice (decode_attention.tile: at these batches,
the earlier tiles and loop, nothing read before the wait).

    SHAPE=llama3-8b PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-attn-ahead-2026-12-02/ab_batch.py
"""

import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "gpu-h200-overlap-2026-12-02")]
import decode_attention_old  # noqa: E402
from decode_step import SHAPE, B, decode_attention_at, time_rounds  # noqa: E402

import engine.cuda.decode_attention as committed  # noqa: E402
import engine.cuda.forward as F  # noqa: E402
import engine.cuda.graphs as G  # noqa: E402
from engine import Engine, EngineConfig, SamplingParams, dummy_checkpoint  # noqa: E402

ckpt = dummy_checkpoint(B.SHAPES[SHAPE], seed=0, device="cuda", dtype=torch.bfloat16)
config = EngineConfig(
    device="cuda", kv_cache_bytes=24 << 30, max_num_seqs=128, max_num_batched_tokens=8192, max_model_len=4096
)
engine = Engine(ckpt, config)
d = engine.model.config.head_dim
variants = {
    "before": decode_attention_old.decode_attention,
    "after, 8 warps": decode_attention_at(committed, 256 if d <= 64 else 128, 8, AHEAD=True),
    "after, 4 warps": decode_attention_at(committed, 128 if d <= 64 else 64, 4, AHEAD=True),
    "committed": committed.decode_attention,
}
base = F.decode_attention
G.batch_ladder = lambda n: [n]  # noqa: E731 (capture the one size timed)
for b in (32, 128):
    prompts = [B.rand_prompt(150, 7 * b + i) for i in range(b)]
    engine.generate(prompts, SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    g = engine.runner.graphs
    graphs = {}  # the DecodeGraphs themselves: their input buffers live as long as they do
    for name, fn in variants.items():
        F.decode_attention = fn
        try:
            gr = G.DecodeGraphs(engine.model, engine.kv, b, g.tables.shape[1])
            gr.buf.copy_(g.buf[:, :b])
            gr.tables.copy_(g.tables[:b])
            graphs[name] = gr
        finally:
            F.decode_attention = base
    ts = time_rounds({k: gr.graphs[b].replay for k, gr in graphs.items()})
    print(
        f"{SHAPE} batch {b}: "
        + ", ".join(f"{k} {t * 1e6:.1f} us ({t / ts['before'] - 1:+.1%})" for k, t in ts.items()),
        flush=True,
    )
engine.shutdown()
