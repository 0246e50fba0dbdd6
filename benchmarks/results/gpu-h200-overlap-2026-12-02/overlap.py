"""In-process A/B of the batch-1 decode graph: attention and output projection as dependent
launches, the output projection's tiles, and the greedy token made inside the graph."""

import torch
from decode_step import SHAPE, B, batch1_engine, capture

import engine.cuda as C
import engine.cuda.forward as F
import engine.cuda.linear as L
from engine.cuda.graphs import DecodeGraphs
from engine.sampler import argmax

c = B.SHAPES[SHAPE]
engine = batch1_engine()
base_attn, base_project, base_fwd = F.decode_attention, F.project, DecodeGraphs._forward
o_shape = (c.hidden_size, c.num_heads * c.head_dim)


def variant(attn_pdl: bool, o_pdl: bool, o_tile, ids_in_graph: bool):
    def attn(*a, **k):
        keep, C.PDL = C.PDL, attn_pdl
        try:
            return base_attn(*a, **k)
        finally:
            C.PDL = keep

    def project(x, w, **k):
        is_o = k.get("residual") is not None and not k.get("gated")
        keep, C.PDL = C.PDL, (o_pdl if is_o else C.PDL)
        try:
            return base_project(x, w, **k)
        finally:
            C.PDL = keep

    def fwd(self, size):
        ids, pos, slots, lens = (self.buf[i, :size] for i in range(4))
        meta = F.CudaAttentionMetadata(slots, num_decode=size, decode_tables=self.tables[:size], decode_lens=lens)
        return F.forward(self.model, ids, pos, meta, self.kv.k, self.kv.v, ids=self.ids[size] if ids_in_graph else None)

    F.decode_attention, F.project, DecodeGraphs._forward = attn, project, fwd
    tuned = dict(L.TUNED)
    if o_tile:
        L.TUNED[o_shape] = o_tile
    try:
        gr = capture(engine)
    finally:
        F.decode_attention, F.project, DecodeGraphs._forward = base_attn, base_project, base_fwd
        L.TUNED.clear()
        L.TUNED.update(tuned)
    replay = gr.graphs[1].replay
    step = replay if ids_in_graph else (lambda: (replay(), argmax(gr.outputs[1])))
    return gr, step


o_full = {"llama3.2-1b": (8, 1024, 8, 2), "llama3-8b": (4, 2048, 8, 2)}[SHAPE]
o_half = {"llama3.2-1b": None, "llama3-8b": (8, 1024, 8, 2)}[SHAPE]
variants = {
    "before (no attn/O PDL, argmax after)": (False, False, None, False),
    "argmax in graph": (False, False, None, True),
    "+ attention PDL": (True, False, None, True),
    "+ attention and O PDL (committed)": (True, True, None, True),
    "+ O tile half preload": (True, True, o_half, True),
    "+ O tile full preload": (True, True, o_full, True),
}
built = {name: variant(*v) for name, v in variants.items()}
ref = None
for name, (gr, step) in built.items():
    step()
    torch.cuda.synchronize()
    out = gr.outputs[1].clone()
    if ref is None:
        ref = out
    print(
        f"{name}: logits equal to the first variant: {torch.equal(out, ref)}; ids {gr.ids[1].tolist() if variants[name][3] else '-'} argmax {argmax(out).tolist()}",
        flush=True,
    )
times = {name: [] for name in built}
for r in range(5):
    for name, (_, step) in built.items() if r % 2 == 0 else reversed(built.items()):
        times[name].append(B.cuda_time(step, 100))
print(
    f"{B.torch.cuda.get_device_name()} {SHAPE}: batch-1 step (graph replay, plus the argmax where it is outside), median of 5 rounds x 100"
)
for name, ts in times.items():
    ts.sort()
    print(f"  {ts[2] * 1e6:8.1f} us  (min {ts[0] * 1e6:.1f}, max {ts[-1] * 1e6:.1f})  {name}")
for name in ["before (no attn/O PDL, argmax after)", "+ attention and O PDL (committed)"]:
    gr, step = built[name]
    print(f"kernels, {name}:")
    for kname, (calls, us) in B.kernel_breakdown(step)[:8]:
        print(f"  {us:8.1f} us {calls:4d} calls  {kname[:90]}")
engine.shutdown()
