"""One MoE layer's random weights for a single row, and what the batch-1 expert kernels
(engine/cuda/moe.py: experts_add_decode) must add to it: engine/moe.py's routing and experts on the
normalised row, in float32. Shared by the GPU test (test_cuda.py) and the CPU interpreter's
(test_cuda_interpreted.py)."""

import torch
import torch.nn.functional as F

from engine.moe import mixture, route

EPS = 1e-6


def layer(hidden: int, width: int, experts: int, device: str, tied: bool = False) -> tuple[torch.Tensor, ...]:
    """(x, norm, router, gate_up, down): the row (bf16), its RMSNorm weight, the float32 router and the
    bf16 experts, seeded by the shape. Tied: experts 1 and 3 have the same router row, which scores above
    every other, so the row's first two places tie (the first of equal ones goes first)."""
    g = torch.Generator(device=device).manual_seed(hidden + experts)
    x = torch.randn(1, hidden, generator=g, device=device).to(torch.bfloat16)
    norm = (1 + 0.3 * torch.randn(hidden, generator=g, device=device)).to(torch.bfloat16)
    router = 0.5 * torch.randn(experts, hidden, generator=g, device=device)
    if tied:
        top = int((x.float() * norm.float() @ router.t()).argmax())
        router[1] = router[3] = 2 * router[top]
    gate_up = (0.1 * torch.randn(experts, 2 * width, hidden, generator=g, device=device)).to(torch.bfloat16)
    down = (0.1 * torch.randn(experts, hidden, width, generator=g, device=device)).to(torch.bfloat16)
    return x, norm, router, gate_up, down


def expected(x, norm, router, gate_up, down, top_k: int, renormalise: bool) -> torch.Tensor:
    """x plus the mixture of its normalised row's top_k experts, in float32."""
    xf = x.float()
    h = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * norm.float()
    weights, ids = route(h, router, top_k, renormalise)

    def expert(e: int, rows: torch.Tensor) -> torch.Tensor:
        gate, up = (rows @ gate_up[e].float().t()).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ down[e].float().t()

    return xf + mixture(h, weights, ids, expert)


def ulps(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest error in units of 2^-8 of the exact value (of 0.05 near zero): under 2 is bf16's
    rounding of it, so every expert and weight was the same."""
    return float(((got.float() - want).abs() / (want.abs().clamp_min(0.05) * 2**-8)).max())
