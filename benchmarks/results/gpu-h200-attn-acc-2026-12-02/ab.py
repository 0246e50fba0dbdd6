"""A/B of the prefill attention kernel: main before this change (prefill_base.py, beside this file)
against engine/cuda/prefill_attention.py, in alternating rounds (the GPU's clocks depend on what ran
just before), outputs compared; then the new kernel under other tiles.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-attn-acc-2026-12-02/ab.py
"""

import os
import statistics
import sys

import torch

dev = "cuda"
H, KVH, BS = 32, 8, 16
CASES = {
    "4 x 2048 fresh": [(i * 2048, 2048, 2048) for i in range(4)],
    "1 x 8192 fresh": [(0, 8192, 8192)],
    "2 x 1024 after 3072 cached": [(0, 1024, 4096), (1024, 1024, 4096)],
}
OTHER_TILES = {128: [(128, 64, 8, 3), (128, 128, 8, 4), (128, 64, 8, 4)], 64: [(128, 64, 4, 3), (128, 128, 4, 4)]}


def case(specs, d):
    """(q_start, q_len, kv_len) per chunk -> the kernel's arguments over a shuffled paged cache, FLOPs."""
    nb = sum(-(-kl // BS) for _, _, kl in specs) + 8
    kc = torch.randn(nb, BS, KVH, d, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    q = torch.randn(sum(s[1] for s in specs), H, d, device=dev, dtype=torch.bfloat16)
    perm = torch.randperm(nb, device=dev)
    tt = torch.zeros(len(specs), max(-(-kl // BS) for _, _, kl in specs), dtype=torch.int32, device=dev)
    at = 0
    for i, (_, _, kl) in enumerate(specs):
        n = -(-kl // BS)
        tt[i, :n] = perm[at : at + n]
        at += n

    def col(j):
        return torch.tensor([s[j] for s in specs], dtype=torch.int32, device=dev)

    args = (q, kc, vc, tt, col(0), col(1), col(2), max(s[1] for s in specs), d**-0.5)
    flops = sum(2 * 2 * ql * (kl - ql + (ql + 1) / 2) * H * d for _, ql, kl in specs)
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


def main(base, new) -> None:
    """base and new: modules with prefill_attention and CONFIGS."""
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    for d in (128, 64):
        for name, specs in CASES.items():
            args, flops = case(specs, d)
            out_base, out_new = torch.empty_like(args[0]), torch.empty_like(args[0])
            runs: dict[str, list[float]] = {"base": [], "new": []}
            for r in range(6):  # alternating order: base first in even rounds, new first in odd ones
                order = [("base", base.prefill_attention, out_base), ("new", new.prefill_attention, out_new)]
                for label, fn, out in order if r % 2 == 0 else order[::-1]:
                    runs[label].append(timeit(fn, args, out))
            err = ((out_new.float() - out_base.float()).abs().max() / out_base.float().abs().max()).item()
            tb, tn = statistics.median(runs["base"]), statistics.median(runs["new"])
            line = (
                f"D={d} {name}: base {flops / tb / 1e12:.0f} TFLOP/s ({tb * 1e3:.3f} ms) | new {flops / tn / 1e12:.0f} "
                f"TFLOP/s ({tn * 1e3:.3f} ms), {tb / tn:.3f}x, max diff {err:.1e} | new, other tiles:"
            )
            engine_tile = new.CONFIGS[d]
            for cfg in OTHER_TILES[d]:
                new.CONFIGS[d] = cfg
                t = timeit(new.prefill_attention, args, out_new)
                line += f" {cfg}: {flops / t / 1e12:.0f}"
            new.CONFIGS[d] = engine_tile
            print(line, flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import prefill_base

    from engine.cuda import prefill_attention

    main(prefill_base, prefill_attention)
