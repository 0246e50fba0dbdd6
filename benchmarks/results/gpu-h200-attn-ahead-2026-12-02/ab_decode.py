"""Batch-1 decode graph, timed whole, with three decode-attention kernels at several
tiles and context lengths; logits compared with the committed kernel's at each length.

- before: decode_attention_old.py, as committed before (every key and value read after the wait);
- pipelined: decode_attention_pipelined.py, the first tile read before the wait and each later
  tile one iteration ahead;
- peeled: decode_attention_peeled.py, the first tile read before the wait, later tiles read
  where they are used;
- committed: engine/cuda/decode_attention.py as committed after: at batch 1 the pipelined kernel,
  the new token's row read by its own offset, 256-token tiles with 8 warps for head dim 64, 128
  for 128.

Run with FINAL=1, it times only before, pipelined at the committed tiles, and committed.

    SHAPE=llama3.2-1b PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-attn-ahead-2026-12-02/ab_decode.py
"""

import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "gpu-h200-overlap-2026-12-02")]
import decode_attention_old  # noqa: E402
import decode_attention_peeled  # noqa: E402
import decode_attention_pipelined  # noqa: E402
from decode_step import SHAPE, batch1_engine, capture, decode_attention_at, time_rounds  # noqa: E402

import engine.cuda.decode_attention as committed  # noqa: E402
import engine.cuda.forward as F  # noqa: E402

engine = batch1_engine()
d = engine.model.config.head_dim
width = engine.runner.graphs.tables.shape[1]
blocks, bs = engine.kv.k.shape[1], engine.kv.k.shape[2]
engine.kv.k.normal_()
engine.kv.v.normal_()
final = os.environ.get("FINAL") == "1"
tiles = [(128, 4), (256, 8), (256, 4)] if d <= 64 else [(64, 4), (128, 8), (128, 4)]
variants = {"before": decode_attention_old.decode_attention}
for name, module in (("pipelined", decode_attention_pipelined), ("peeled", decode_attention_peeled)):
    for bn, w in tiles[1:2] if final else tiles:
        if not (final and name == "peeled"):
            variants[f"{name} {bn}/{w}w"] = decode_attention_at(module, bn, w)
variants["committed"] = committed.decode_attention
base = F.decode_attention
graphs = {}
for name, fn in variants.items():
    F.decode_attention = fn
    try:
        graphs[name] = capture(engine)
    except Exception as e:  # noqa: BLE001 (a tile that does not compile: say so, go on)
        print(f"{name}: {type(e).__name__} {str(e)[:100]}", flush=True)
    finally:
        F.decode_attention = base
for ctx in (190, 1000, 4000):
    table = torch.arange(width, device="cuda", dtype=torch.int32) % blocks
    for gr in graphs.values():
        gr.buf[3, 0] = ctx
        gr.buf[1, 0] = ctx - 1
        gr.buf[2, 0] = int(table[(ctx - 1) // bs]) * bs + (ctx - 1) % bs  # the new token's slot
        gr.tables[0] = table
    logits = {}
    for name, gr in graphs.items():
        gr.graphs[1].replay()
        logits[name] = gr.outputs[1].clone()
    ts = time_rounds({k: gr.graphs[1].replay for k, gr in graphs.items()})
    line = f"{SHAPE} context {ctx}: before {ts['before'] * 1e6:.1f} us"
    for name in graphs:
        if name != "before":
            diff = (logits[name] - logits["before"]).abs().max().item()
            line += f" | {name} {ts[name] * 1e6:.1f} ({ts[name] / ts['before'] - 1:+.1%}, logits differ by {diff:.2g})"
    print(line, flush=True)
engine.shutdown()
