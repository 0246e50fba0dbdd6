"""Dense projections, y = x Wᵀ + b, prepared once for the fastest kernel on the device.

Two CPU kernels, and which wins depends on the CPU: on the 2-core AMD EPYC box this
engine was tuned on, MKL's sgemm for a handful of rows (decode) ran at a fraction of
memory bandwidth, and oneDNN with a pre-packed weight was about 2x faster for one row,
4x for eight and 2.4x for a 512-token prefill chunk; on an Intel Xeon, MKL was the
faster one. So by default the engine times both once per process on decode-shaped
projections (`onednn_is_faster`) and keeps the winner. Elsewhere (a GPU, or a torch
without oneDNN) a plain matmul against a pre-transposed contiguous weight. With
`weights="int4"` the projections keep 4-bit codes for up to INT4_ROWS rows, and a
dense copy of the same weights for more (quant.py says why). Where the CPU has AVX512-VNNI
and a C compiler is at hand, the 4-bit kernel is the engine's own (cpu/quantized.c, kind "q4"):
float32 activations, and the norm before a projection, SiLU·up before the down projection
and the residual add after it run inside the kernel's call. Elsewhere it is torch's (kind
"int4"), with bfloat16 activations.
"""

import logging
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.cpu import quantized
from engine.cpu.build import unavailable_reason
from engine.quant import (
    dequantize_int4,
    int4_matmul,
    int4_supported,
    pack_int4,
    quantize_int4,
)

log = logging.getLogger("engine")


@dataclass
class Linear:
    # oneDNN-, int4-, q4- or q8-packed, or (in, out) contiguous for "matmul"
    weight: torch.Tensor | quantized.Q4Weight | quantized.Q8Weight
    bias: torch.Tensor | None
    out_features: int
    kind: str  # "onednn" | "int4" | "q4" | "q8" | "matmul"
    scale_zero: torch.Tensor | None = None  # int4: (in / 32, out, 2)
    dense: "Linear | None" = None  # int4, q4, q8: the same weights dense, for more rows than the kernel takes


def onednn_available(device: torch.device) -> bool:
    return (
        device.type == "cpu"
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


# Batch-size hint for the packed layout; 64 was fastest from 1 to 512 rows on the tuning box.
_PACK_HINT = 64
# The most rows torch's 4-bit kernel takes: at 4 it beat oneDNN's bfloat16 kernel by 25%, at 8 they tied.
INT4_ROWS = 4
# The most rows the engine's kernels take (cpu/quantized.c), against oneDNN's bfloat16 kernel on
# SmolLM2's shapes (30 layers, 2 threads): 4-bit at 8 rows 15% ahead, at 12 25% behind; the
# 8-bit output projection at 4 rows 10% ahead, at 6 15% behind.
Q4_ROWS, Q8_ROWS = 8, 4


def int4_dtype() -> torch.dtype:
    """The activations' dtype for 4-bit weights: the engine's kernel takes float32, torch's bfloat16."""
    reason = unavailable_reason()
    if reason is not None:
        log.info("4-bit projections: torch's kernel with bfloat16 activations (%s)", reason)
    return torch.bfloat16 if reason else torch.float32


def make_linear(
    weight: torch.Tensor, bias: torch.Tensor | None, device, dtype, use_onednn: bool, int4: bool = False
) -> Linear:
    """weight: (out, in) as Hugging Face stores it. `int4` keeps 4-bit codes where the
    kernel takes the shape (else falls back to a dense weight in `dtype`)."""
    weight = weight.to(device)
    b = None if bias is None else bias.to(device=device, dtype=dtype).contiguous()
    if int4 and dtype == torch.float32 and quantized.supports(weight):
        codes, scale_zero = quantize_int4(weight)
        dense = make_linear(dequantize_int4(codes, scale_zero), bias, device, torch.bfloat16, use_onednn)
        return Linear(quantized.pack(codes, scale_zero, bias), b, weight.shape[0], "q4", None, dense)
    if int4 and dtype == torch.bfloat16 and int4_supported(weight):
        codes, scale_zero = quantize_int4(weight)
        dense = make_linear(dequantize_int4(codes, scale_zero), bias, device, dtype, use_onednn)
        return Linear(pack_int4(codes), b, weight.shape[0], "int4", scale_zero.to(dtype), dense)
    w = weight.to(dtype=dtype).contiguous()
    if use_onednn:
        try:
            return Linear(torch.ops.mkldnn._reorder_linear_weight(w, _PACK_HINT), b, w.shape[0], "onednn")
        except RuntimeError:
            pass  # this torch cannot pack the weight: use the portable path
    return Linear(w.t().contiguous(), b, w.shape[0], "matmul")


def make_head(weight: torch.Tensor, device, dtype, use_onednn: bool, int4: bool) -> Linear:
    """The output projection. Beside 4-bit layers (`int4`): with float32 activations (the engine's
    kernels) 8-bit codes, plus a bfloat16 copy for more than Q8_ROWS rows; with bfloat16 ones,
    bfloat16."""
    if int4 and dtype == torch.float32 and quantized.supports(weight):
        dense = make_linear(weight, None, device, torch.bfloat16, use_onednn)
        return Linear(quantized.pack8(weight.to(device)), None, weight.shape[0], "q8", None, dense)
    return make_linear(weight, None, device, dtype, use_onednn)


def linear(
    x: torch.Tensor,
    lin: Linear,
    *,
    norm: tuple[torch.Tensor, float] | None = None,
    swiglu: bool = False,
    residual: torch.Tensor | None = None,
) -> torch.Tensor:
    """f(x) Wᵀ + b (+ residual): x (T, in) -> (T, out). f is RMSNorm with `norm`'s (weight, eps),
    or SiLU(gate)·up with `swiglu` (x then holds gate and up side by side). `residual` may be
    updated in place."""
    if lin.kind == "q4" and 0 < x.shape[0] <= Q4_ROWS:
        assert isinstance(lin.weight, quantized.Q4Weight)
        prologue = "rmsnorm" if norm else "swiglu" if swiglu else "none"
        w_norm, eps = norm or (None, 0.0)
        return quantized.linear(x.contiguous(), lin.weight, prologue, w_norm, eps, out=residual)
    if lin.kind == "q8" and norm is not None and residual is None and 0 < x.shape[0] <= Q8_ROWS:
        assert isinstance(lin.weight, quantized.Q8Weight)
        return quantized.linear8(x.contiguous(), lin.weight, *norm)
    if norm is not None:
        x = F.rms_norm(x, (x.shape[-1],), *norm)
    if swiglu:
        gate, up = x.chunk(2, dim=-1)
        x = F.silu(gate) * up
    y = _product(x, lin)
    return y if residual is None else residual + y


def _product(x: torch.Tensor, lin: Linear) -> torch.Tensor:
    if x.shape[0] == 0:
        return x.new_empty((0, lin.out_features))
    if lin.kind in ("q4", "q8"):  # the dense copy is bfloat16, half the bytes of float32
        assert lin.dense is not None
        return _product(x.to(torch.bfloat16), lin.dense).float()
    assert isinstance(lin.weight, torch.Tensor)
    if lin.kind == "onednn":
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), lin.weight, lin.bias, "none", [], "")
    if lin.kind == "int4":
        assert lin.dense is not None and lin.scale_zero is not None, (
            "an int4 Linear is built with its scales and dense copy"
        )
        if x.shape[0] > INT4_ROWS:
            return _product(x, lin.dense)
        y = int4_matmul(x, lin.weight, lin.scale_zero)
        return y if lin.bias is None else y + lin.bias
    if lin.bias is None:
        return x @ lin.weight
    return torch.addmm(lin.bias, x, lin.weight)


_measured: dict[str, bool] = {}


def onednn_is_faster(device: torch.device) -> bool:
    """Time both kernels on 1- and 8-row products with SmolLM2-sized weights (more of
    them than fit in cache, as in a real forward pass); remembered per device."""
    key = str(device)
    if key not in _measured:
        if not onednn_available(device):
            _measured[key] = False
            return False
        g = torch.Generator().manual_seed(0)
        weights = [torch.randn(3072, 576, generator=g) for _ in range(6)]
        inputs = [torch.randn(m, 576, generator=g) for m in (1, 8)]

        def best_time(lins: list[Linear]) -> float:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                for x in inputs:
                    for lin in lins:
                        linear(x, lin)
                times.append(time.perf_counter() - start)
            return min(times)

        with torch.inference_mode():
            packed = [make_linear(w, None, device, torch.float32, True) for w in weights]
            plain = [make_linear(w, None, device, torch.float32, False) for w in weights]
            best_time(packed), best_time(plain)  # warm up both
            t_packed, t_plain = best_time(packed), best_time(plain)
        _measured[key] = packed[0].kind == "onednn" and t_packed < t_plain
        log.info(
            "CPU projections: oneDNN packed %.2f ms, plain matmul %.2f ms -> %s",
            t_packed * 1e3,
            t_plain * 1e3,
            "oneDNN" if _measured[key] else "plain matmul",
        )
    return _measured[key]
