"""One Qwen3-30B-A3B layer's batch-1 kernels launched eagerly, for Nsight Compute: the QKV and output
projections and the three expert kernels (router, gate/up, down), over eight layers' weights so that no
kernel finds its weights in L2, six steps. On the GPU machine, from the repository root:

    ncu --clock-control none --kernel-name 'regex:_gemv_kernel|_decode_up_kernel|_decode_down_kernel' \\
        --launch-skip 40 --launch-count 10 --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        --section Occupancy --section WarpStateStats --section LaunchStats \\
        python3 benchmarks/ncu_moe_layer.py [BLOCK_N,BLOCK_K,WARPS[,...]]

The optional argument is the gate/up kernel's tile (moe.DECODE_TILES[0]); the engine's by default.
"""

import sys

import torch

from engine.cuda.linear import gemv
from engine.cuda.moe import DECODE_TILES, experts_add_decode

HIDDEN, EXPERTS, INTER, QKV, Q, TOP_K, LAYERS = 2048, 128, 768, 5120, 4096, 8, 8


def main() -> None:
    up = tuple(int(v) for v in sys.argv[1].split(",")) if len(sys.argv) > 1 else DECODE_TILES[0]
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    layers = [
        {
            "qkv": torch.randn(QKV, HIDDEN, device=dev, dtype=bf) * 0.02,
            "o": torch.randn(HIDDEN, Q, device=dev, dtype=bf) * 0.02,
            "router": torch.randn(EXPERTS, HIDDEN, device=dev) * 0.02,
            "gate_up": torch.randn(EXPERTS, 2 * INTER, HIDDEN, device=dev, dtype=bf) * 0.02,
            "down": torch.randn(EXPERTS, HIDDEN, INTER, device=dev, dtype=bf) * 0.02,
        }
        for _ in range(LAYERS)
    ]
    norm = torch.ones(HIDDEN, device=dev, dtype=bf)
    x = torch.randn(1, HIDDEN, device=dev, dtype=bf)
    qkv = torch.empty(1, QKV, device=dev, dtype=bf)
    attn = torch.randn(1, Q, device=dev, dtype=bf)
    for _ in range(6):
        for w in layers:
            gemv(x, w["qkv"], qkv, norm, 1e-6)
            gemv(attn, w["o"], x, residual=True)
            experts_add_decode(x, norm, 1e-6, w["router"], w["gate_up"], w["down"], TOP_K, True, (up, DECODE_TILES[1]))
            x.clamp_(-4, 4)  # the stream stays finite over 48 layers of random weights
    torch.cuda.synchronize()
    print("done, gate/up tile", up)


if __name__ == "__main__":
    main()
