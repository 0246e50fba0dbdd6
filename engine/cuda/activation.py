"""SiLU(gate) * up over the fused gate/up projection's output, in one kernel."""

import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul_kernel(x_ptr, out_ptr, inter, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < inter
    gate = tl.load(x_ptr + row * 2 * inter + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * inter + inter + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * inter + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """x: (T, 2 * I) with gate in the first half, up in the second; returns (T, I)."""
    assert x.is_contiguous()
    t, two_i = x.shape
    inter = two_i // 2
    out = torch.empty((t, inter), dtype=x.dtype, device=x.device)
    block = 1024
    _silu_mul_kernel[(t, triton.cdiv(inter, block))](x, out, inter, BLOCK=block, num_warps=4)
    return out
