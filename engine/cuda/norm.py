"""RMSNorm, optionally fused with the residual add before it: one pass over the row.

`add_rms_norm(h, residual, w)` does `residual += h; return rms_norm(residual) * w`,
so each layer's two residual adds cost no kernel of their own. Statistics are taken
in float32 on the un-rounded sum.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, n_cols, eps, HAS_RES: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RES:
        x += tl.load(res_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(res_ptr + row * n_cols + offs, x.to(res_ptr.dtype.element_ty), mask=mask)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def _launch(x: torch.Tensor, res: torch.Tensor | None, w: torch.Tensor, eps: float) -> torch.Tensor:
    assert x.is_contiguous() and (res is None or res.is_contiguous())
    n = x.shape[-1]
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    _rms_norm_kernel[(x.numel() // n,)](x, res if res is not None else x, w, out, n, eps,
                                         HAS_RES=res is not None, BLOCK=block, num_warps=warps)
    return out


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return _launch(x, None, w, eps)


def add_rms_norm(h: torch.Tensor, residual: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """residual += h (in place); returns rms_norm(residual) * w."""
    return _launch(h, residual, w, eps)
