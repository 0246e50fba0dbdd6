"""The batch-1 decode graph of one shape, timed whole, over the projections' tiles: one
matrix at a time (coordinate descent), each candidate captured afresh and timed in rounds
interleaved with the others, so that PDL overlap between neighbours counts."""

import json
import os
import time

import torch
from decode_step import SHAPE, B, batch1_engine, capture, time_rounds

import engine.cuda.linear as L

out_dir = os.environ.get("OUT", ".")
c = B.SHAPES[SHAPE]
engine = batch1_engine()
H, KVH, D, E, I = c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_size, c.intermediate_size
mats = {
    "lm_head": (c.vocab_size, E),
    "down": (E, I),
    "gate_up": (2 * I, E),
    "qkv": ((H + 2 * KVH) * D, E),
    "o": (E, H * D),
}


pairs = [(2, 2048), (2, 4096), (4, 1024), (4, 2048), (8, 512), (8, 1024), (16, 256), (16, 512)]
start_cfg = {name: L.gemv_config(*nk) for name, nk in mats.items()}
best = dict(start_cfg)
log = []
t0 = time.time()
for name in ["lm_head", "down", "gate_up", "qkv", "o"]:
    n, k = mats[name]
    cands = [best[name]] + [
        (bn, bk, w, a)
        for bn, bk in pairs
        for w in (4, 8)
        for a in (1, 2)
        if bk <= k and (bn, bk, w, a) != best[name] and not (a == 2 and bk >= k)
    ]
    if name == "qkv":
        cands = [x for x in cands if D % x[0] == 0]
    graphs = {}  # the captures themselves: their input buffers live as long as they do
    for cfg in cands:
        L.TUNED[(n, k)] = cfg
        try:
            graphs[cfg] = capture(engine)
        except Exception as e:  # noqa: BLE001 (a tile that does not compile: skip it)
            print(f"  {name} {cfg}: {type(e).__name__} {str(e)[:80]}", flush=True)
    times = time_rounds({cfg: g.graphs[1].replay for cfg, g in graphs.items()})
    ranked = sorted(times.items(), key=lambda kv: kv[1])
    print(
        f"{name} {n}x{k} ({time.time() - t0:.0f}s): current {best[name]} {times[best[name]] * 1e6:.1f} us; best "
        + ", ".join(f"{cfg} {t * 1e6:.1f}" for cfg, t in ranked[:6]),
        flush=True,
    )
    log.append({"matrix": name, "times_us": {str(cfg): t * 1e6 for cfg, t in ranked}})
    best[name] = ranked[0][0]
    L.TUNED[(n, k)] = best[name]
    del graphs
    torch.cuda.empty_cache()

final = {}
for label, cfgs in (("start", start_cfg), ("swept", best)):
    for name, cfg in cfgs.items():
        L.TUNED[mats[name]] = cfg
    final[label] = capture(engine)
times = time_rounds({k: g.graphs[1].replay for k, g in final.items()}, rounds=7)
print(
    f"{SHAPE} whole graph: start {times['start'] * 1e6:.1f} us {start_cfg}; swept {times['swept'] * 1e6:.1f} us {best}",
    flush=True,
)
json.dump(
    {
        "shape": SHAPE,
        "log": log,
        "start": str(start_cfg),
        "best": str(best),
        "final_us": {k: v * 1e6 for k, v in times.items()},
    },
    open(os.path.join(out_dir, f"sweep-{SHAPE}.json"), "w"),
    indent=1,
)
engine.shutdown()
