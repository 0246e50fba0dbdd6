"""Dense projections, y = x Wᵀ + b, prepared once for the fastest kernel on the device.

On CPU the weight is pre-packed for oneDNN when torch has it: on the 2-core AMD EPYC
box this engine was tuned on, MKL's sgemm for a handful of rows (decode) ran at a
fraction of memory bandwidth, and oneDNN with a packed weight was about 2x faster for
one row, 4x for eight and 2.4x for a 512-token prefill chunk. Elsewhere (a GPU, or a
torch without oneDNN) a plain matmul against a pre-transposed contiguous weight.
"""

from dataclasses import dataclass

import torch


@dataclass
class Linear:
    weight: torch.Tensor  # oneDNN-packed (opaque) when `packed`, else (in, out) contiguous
    bias: torch.Tensor | None
    out_features: int
    packed: bool


def onednn_available(device: torch.device) -> bool:
    return (
        device.type == "cpu"
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


# Batch-size hint for the packed layout; 64 was fastest from 1 to 512 rows on the tuning box.
_PACK_HINT = 64


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None, device, dtype, use_onednn: bool) -> Linear:
    """weight: (out, in) as Hugging Face stores it."""
    w = weight.to(device=device, dtype=dtype).contiguous()
    b = None if bias is None else bias.to(device=device, dtype=dtype).contiguous()
    if use_onednn:
        try:
            return Linear(torch.ops.mkldnn._reorder_linear_weight(w, _PACK_HINT), b, w.shape[0], True)
        except RuntimeError:
            pass  # this torch cannot pack the weight: use the portable path
    return Linear(w.t().contiguous(), b, w.shape[0], False)


def linear(x: torch.Tensor, lin: Linear) -> torch.Tensor:
    """x: (T, in) -> (T, out)."""
    if x.shape[0] == 0:
        return x.new_empty((0, lin.out_features))
    if lin.packed:
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), lin.weight, lin.bias, "none", [], "")
    if lin.bias is None:
        return x @ lin.weight
    return torch.addmm(lin.bias, x, lin.weight)
