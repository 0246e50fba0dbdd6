"""Quantised projections on the CPU (quantized.c): the weights' layouts and the calls.

4-bit codes for the layers' projections (the GGUF Q4_1 form, from quant.quantize_int4), 8-bit
codes for the output projection (the Q8_0 form the GGUF files store it in). Each weight carries
the C struct (kernels.h) that points at its tensors, built once.
"""

import ctypes
from dataclasses import dataclass, field

import torch

from engine.cpu.build import library

GROUP = 32
BLOCK = 128  # inputs per 512-bit load of codes (quantized.c)
PROLOGUE = {"none": 0, "rmsnorm": 1, "swiglu": 2}
_p, _i = ctypes.c_void_p, ctypes.c_int


class Q4Struct(ctypes.Structure):
    _fields_ = [("codes", _p), ("d", _p), ("m", _p), ("bias", _p), ("in_features", _i), ("out_features", _i)]


class Q8Struct(ctypes.Structure):
    _fields_ = [("codes", _p), ("d", _p), ("c", _p), ("in_features", _i), ("out_features", _i)]


def _ptr(t: torch.Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


@dataclass
class Q4Weight:
    codes: torch.Tensor  # (out, in / 2) uint8, blocks of 128 inputs (quantized.c)
    d: torch.Tensor  # (out, in / 32) float16 scales
    m: torch.Tensor  # (out, in / 32) float16 offsets: w = d·q + m
    bias: torch.Tensor | None  # (out,) float32
    in_features: int
    out_features: int
    struct: Q4Struct = field(init=False, repr=False)

    def __post_init__(self):
        self.struct = Q4Struct(
            self.codes.data_ptr(),
            self.d.data_ptr(),
            self.m.data_ptr(),
            _ptr(self.bias),
            self.in_features,
            self.out_features,
        )


@dataclass
class Q8Weight:
    codes: torch.Tensor  # (out, in) int8, w = d·q
    d: torch.Tensor  # (out, in / 32) float16
    c: torch.Tensor  # (out, in / 32) float32: -128·d·Σq per group (quantized.c)
    in_features: int
    out_features: int
    struct: Q8Struct = field(init=False, repr=False)

    def __post_init__(self):
        self.struct = Q8Struct(
            self.codes.data_ptr(), self.d.data_ptr(), self.c.data_ptr(), self.in_features, self.out_features
        )


def supports(weight: torch.Tensor) -> bool:
    return weight.device.type == "cpu" and weight.shape[1] % 64 == 0


def pack(codes: torch.Tensor, scale_zero: torch.Tensor, bias: torch.Tensor | None) -> Q4Weight:
    """codes (out, in) in 0..15 and scale_zero (in / 32, out, 2) from quant.quantize_int4
    (w = (q - 8)·scale + zero) -> the kernel's layout."""
    out_features, in_features = codes.shape
    c = codes.to(torch.uint8)
    full = in_features // BLOCK * BLOCK
    blocks = [c[:, :full].reshape(out_features, -1, 4, GROUP)]  # (out, blocks, groups, 32)
    if full < in_features:  # a tail of two groups
        blocks.append(c[:, full:].reshape(out_features, 1, 2, GROUP))
    parts = []
    for b in blocks:
        n = b.shape[2]
        # element 16h + 4j + k of group gi -> half h, byte 4(n·j + gi) + k (quantized.c)
        halves = b.view(out_features, b.shape[1], n, 2, 4, 4).permute(0, 1, 3, 4, 2, 5)
        halves = halves.reshape(out_features, b.shape[1], 2, 16 * n)
        parts.append((halves[:, :, 0] | (halves[:, :, 1] << 4)).reshape(out_features, -1))
    sz = scale_zero.float().transpose(0, 1)  # (out, groups, 2)
    d = sz[..., 0]
    m = sz[..., 1] - 8 * d
    return Q4Weight(
        torch.cat(parts, 1).contiguous(),
        d.half().contiguous(),
        m.half().contiguous(),
        None if bias is None else bias.float().contiguous(),
        in_features,
        out_features,
    )


def pack8(weight: torch.Tensor) -> Q8Weight:
    """(out, in) float weight -> 8-bit codes per group of 32, q = round(w / d), d = max|w| / 127.
    A Q8_0 weight from a GGUF file comes back to its own codes."""
    out_features, in_features = weight.shape
    w = weight.float().reshape(out_features, in_features // GROUP, GROUP)
    d = (w.abs().amax(-1) / 127).half().float()
    q = torch.round(w / torch.where(d == 0, 1.0, d)[..., None]).clamp_(-127, 127)
    return Q8Weight(
        q.to(torch.int8).reshape(out_features, in_features).contiguous(),
        d.half().contiguous(),
        (-128 * d * q.sum(-1)).contiguous(),
        in_features,
        out_features,
    )


def dequantize8(w: Q8Weight) -> torch.Tensor:
    """The float32 (out, in) weight that w stands for."""
    groups = w.codes.float().view(w.out_features, -1, GROUP)
    return (groups * w.d.float()[..., None]).view(w.out_features, w.in_features)


def _rows(x: torch.Tensor) -> torch.Tensor:
    assert x.dtype == torch.float32 and x.stride(-1) == 1, "the kernels read float32 rows"
    return x


def linear(
    x: torch.Tensor,  # (T, in) float32 rows, or (T, 2·in) gate then up for "swiglu"
    w: Q4Weight,
    prologue: str = "none",
    norm_weight: torch.Tensor | None = None,
    eps: float = 0.0,
    out: torch.Tensor | None = None,  # given: the product is added to it in place
) -> torch.Tensor:
    """f(x) Wᵀ + b, where f is the prologue; with `out`, out += that and out is returned."""
    lib = library()
    assert not isinstance(lib, str), lib
    x = _rows(x)
    add = out is not None
    y = _rows(out) if out is not None else torch.empty(x.shape[0], w.out_features)
    lib.q4_linear(
        x.shape[0],
        x.data_ptr(),
        x.stride(0),
        PROLOGUE[prologue],
        _ptr(norm_weight),
        eps,
        ctypes.byref(w.struct),
        y.data_ptr(),
        y.stride(0),
        int(add),
    )
    return y


def linear8(x: torch.Tensor, w: Q8Weight, norm_weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm(x)·norm_weight Wᵀ: x (T, in) float32 rows -> (T, out)."""
    lib = library()
    assert not isinstance(lib, str), lib
    x = _rows(x)
    y = torch.empty(x.shape[0], w.out_features)
    lib.q8_linear(
        x.shape[0],
        x.data_ptr(),
        x.stride(0),
        norm_weight.data_ptr(),
        eps,
        ctypes.byref(w.struct),
        y.data_ptr(),
        y.stride(0),
    )
    return y
