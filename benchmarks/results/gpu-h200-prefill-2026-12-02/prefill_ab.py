"""A/B of the prefill attention kernel: the previous kernel (prefill_old.py, beside this file)
against engine/cuda/prefill_attention.py under several configs, outputs compared.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-prefill-2026-12-02/prefill_ab.py 128   # head dim
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import prefill_old  # noqa: E402

from engine.cuda import prefill_attention as new  # noqa: E402

dev = "cuda"
H, KVH, D, BS = 32, 8, int(sys.argv[1]) if len(sys.argv) > 1 else 128, 16


def case(specs):
    t_rows = sum(s[1] for s in specs)
    nb = sum(-(-kl // BS) for _, _, kl in specs) + 8
    kc = torch.randn(nb, BS, KVH, D, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    q = torch.randn(t_rows, H, D, device=dev, dtype=torch.bfloat16)
    perm = torch.randperm(nb, device=dev)
    tables, at = [], 0
    for _, _, kl in specs:
        n = -(-kl // BS)
        tables.append(perm[at : at + n])
        at += n
    tt = torch.zeros(len(specs), max(len(t) for t in tables), dtype=torch.int32, device=dev)
    for i, t in enumerate(tables):
        tt[i, : len(t)] = t

    def col(j):
        return torch.tensor([s[j] for s in specs], dtype=torch.int32, device=dev)

    args = (q, kc, vc, tt, col(0), col(1), col(2), max(s[1] for s in specs), D**-0.5)
    flops = sum(2 * 2 * ql * (kl - ql + (ql + 1) / 2) * H * D for _, ql, kl in specs)
    return args, flops


def timeit(fn, args, out, n=20):
    fn(*args, out)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    e0.record()
    for _ in range(n):
        fn(*args, out)
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) / n / 1e3


cases = {
    "4 x 2048 fresh": [(i * 2048, 2048, 2048) for i in range(4)],
    "1 x 8192 fresh": [(0, 8192, 8192)],
    "2 x 1024 after 3072 cached": [(0, 1024, 4096), (1024, 1024, 4096)],
}
for name, specs in cases.items():
    args, flops = case(specs)
    out_old = torch.empty_like(args[0])
    out_new = torch.empty_like(args[0])
    t_old = timeit(prefill_old.prefill_attention, args, out_old)
    line = f"{name}: old {flops / t_old / 1e12:.0f} TFLOP/s ({t_old * 1e3:.3f} ms)"
    for cfg in [(128, 128, 8, 3), (128, 128, 4, 3), (128, 64, 4, 3), (128, 128, 8, 2), (64, 128, 4, 3)]:
        new.CONFIGS[D] = cfg
        try:
            t = timeit(new.prefill_attention, args, out_new)
            err = ((out_new.float() - out_old.float()).abs().max() / out_old.float().abs().max()).item()
            line += f" | {cfg}: {flops / t / 1e12:.0f} TFLOP/s err {err:.1e}"
        except Exception as e:
            line += f" | {cfg}: {type(e).__name__}"
    print(line, flush=True)
