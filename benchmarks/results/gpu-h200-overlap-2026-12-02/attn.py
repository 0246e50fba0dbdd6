"""Batch-1 decode graph, timed whole, over decode-attention partition sizes and tiles, at
several context lengths (the step's K/V contents do not matter for time)."""

import torch
from decode_step import SHAPE, batch1_engine, capture, decode_attention_at, time_rounds

import engine.cuda.decode_attention as A
import engine.cuda.forward as F

engine = batch1_engine()
width = engine.runner.graphs.tables.shape[1]
base = F.decode_attention

variants = {"committed": None}
for part in (64, 128, 256, 512):
    for bn, w in ((64, 4), (32, 4), (32, 2), (128, 4)):
        if bn <= part:
            # AHEAD off: every key and value read after the wait, as the kernel measured here did
            variants[f"part {part} block {bn} warps {w}"] = decode_attention_at(A, bn, w, part=part, AHEAD=False)
graphs = {}
for name, fn in variants.items():
    F.decode_attention = fn or base
    try:
        graphs[name] = capture(engine)
    finally:
        F.decode_attention = base
blocks = engine.kv.k.shape[1]
for ctx in (190, 1000, 4000):
    for gr in graphs.values():
        gr.buf[3, 0] = ctx
        gr.buf[1, 0] = ctx - 1
        gr.tables[0] = torch.arange(width, device="cuda", dtype=torch.int32) % blocks
    ts = time_rounds({k: gr.graphs[1].replay for k, gr in graphs.items()})
    med = sorted((t, k) for k, t in ts.items())
    print(
        f"{SHAPE} context {ctx}: committed {ts['committed'] * 1e6:.1f} us; "
        + ", ".join(f"{k} {t * 1e6:.1f}" for t, k in med[:8]),
        flush=True,
    )
engine.shutdown()
