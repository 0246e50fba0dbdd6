"""The batch-1 decode graph of one shape, timed whole, over the projections' tiles: one
matrix at a time (coordinate descent), each candidate captured afresh and timed in rounds
interleaved with the others, so that PDL overlap between neighbours counts."""

import json
import os
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
import bench_gpu as B  # noqa: E402

import engine.cuda.linear as L  # noqa: E402
from engine import Engine, EngineConfig, SamplingParams, dummy_checkpoint  # noqa: E402
from engine.cuda.graphs import DecodeGraphs  # noqa: E402

shape = os.environ.get("SHAPE", "llama3.2-1b")
out_dir = os.environ.get("OUT", ".")
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
H, KVH, D, E, I = c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_size, c.intermediate_size
mats = {
    "lm_head": (c.vocab_size, E),
    "down": (E, I),
    "gate_up": (2 * I, E),
    "qkv": ((H + 2 * KVH) * D, E),
    "o": (E, H * D),
}


def capture():
    gr = DecodeGraphs(engine.model, engine.kv, 1, width)
    gr.buf.copy_(g.buf[:, :1])
    gr.tables.copy_(g.tables[:1])
    return gr.graphs[1]


def time_all(graphs: dict, rounds: int = 5) -> dict:
    ts = {k: [] for k in graphs}
    for r in range(rounds):
        for k in list(graphs) if r % 2 == 0 else list(reversed(graphs)):
            ts[k].append(B.cuda_time(graphs[k].replay, 60))
    return {k: sorted(v)[len(v) // 2] for k, v in ts.items()}


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
    graphs = {}
    for cfg in cands:
        L.TUNED[(n, k)] = cfg
        try:
            graphs[cfg] = capture()
        except Exception as e:  # noqa: BLE001 (a tile that does not compile: skip it)
            print(f"  {name} {cfg}: {type(e).__name__} {str(e)[:80]}", flush=True)
    times = time_all(graphs)
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
    final[label] = capture()
times = time_all(final, rounds=7)
print(
    f"{shape} whole graph: start {times['start'] * 1e6:.1f} us {start_cfg}; swept {times['swept'] * 1e6:.1f} us {best}",
    flush=True,
)
json.dump(
    {
        "shape": shape,
        "log": log,
        "start": str(start_cfg),
        "best": str(best),
        "final_us": {k: v * 1e6 for k, v in times.items()},
    },
    open(os.path.join(out_dir, f"sweep-{shape}.json"), "w"),
    indent=1,
)
engine.shutdown()
