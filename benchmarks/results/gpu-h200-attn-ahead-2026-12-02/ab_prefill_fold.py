"""Prefill attention with its two key loops (unmasked, then the diagonal) written out
(prefill_unfolded.py) and folded into one static loop (engine/cuda/prefill_attention.py):
outputs compared bit for bit, times side by side.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-attn-ahead-2026-12-02/ab_prefill_fold.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prefill_unfolded  # noqa: E402

from engine.cuda import prefill_attention as folded  # noqa: E402

H, KVH, BS = 32, 8, 16


def run(d: int, specs: list[tuple[int, int, int]]) -> str:
    dev = "cuda"
    nb = sum(-(-kl // BS) for _, _, kl in specs) + 8
    kc = torch.randn(nb, BS, KVH, d, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    q = torch.randn(sum(s[1] for s in specs), H, d, device=dev, dtype=torch.bfloat16)
    perm = torch.randperm(nb, device=dev).to(torch.int32)
    tt = torch.zeros(len(specs), max(-(-kl // BS) for _, _, kl in specs), dtype=torch.int32, device=dev)
    at = 0
    for i, (_, _, kl) in enumerate(specs):
        n = -(-kl // BS)
        tt[i, :n] = perm[at : at + n]
        at += n

    def col(j):
        return torch.tensor([s[j] for s in specs], dtype=torch.int32, device=dev)

    args = (q, kc, vc, tt, col(0), col(1), col(2), max(s[1] for s in specs), d**-0.5)
    outs, times = {}, {}
    fns = {"unfolded": prefill_unfolded.prefill_attention, "folded": folded.prefill_attention}
    for name, fn in fns.items():
        outs[name] = torch.empty_like(q)
        fn(*args, outs[name])
    for r in range(6):
        for name in fns if r % 2 == 0 else reversed(list(fns)):
            fn = fns[name]
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
            e0.record()
            for _ in range(10):
                fn(*args, outs[name])
            e1.record()
            torch.cuda.synchronize()
            times.setdefault(name, []).append(e0.elapsed_time(e1) / 10)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    same = torch.equal(outs["unfolded"], outs["folded"])
    return f"unfolded {med['unfolded']:.3f} ms, folded {med['folded']:.3f} ms, outputs identical: {same}"


for d in (64, 128):
    for name, specs in {
        "4 x 2048 fresh": [(i * 2048, 2048, 2048) for i in range(4)],
        "2 x 1024 after 3072 cached": [(0, 1024, 4096), (1024, 1024, 4096)],
    }.items():
        print(f"head dim {d}, {name}: {run(d, specs)}", flush=True)
