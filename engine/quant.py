"""4-bit weights for CPU decode, in groups of 32 inputs with a scale and a zero each.

Decoding one token reads every weight once, so on a CPU its speed is set by how many
bytes the weights take: float32 SmolLM2-135M moves 540 MB per token, 4-bit codes move
about a seventh of that. The embedded GGUF file already stores its projections as Q4_1
(per 32 inputs, w = d·q + m with q in 0..15), so re-quantising the dequantised weights
by each group's min and max recovers the same codes, scales and offsets: the 4-bit
weights are the file's own, not a further approximation. Other weights (safetensors,
Q4_0/Q8_0 blocks, dummies) are rounded to the nearest of the group's 16 levels.

Where the engine's own kernels run (cpu/quantized.c), they take these codes with float32
activations; elsewhere torch's CPU kernel does (`_weight_int4pack_mm_for_cpu`). It computes
(code - 8)·scale + zero and wants its scales in the activations' dtype; its float32 path is
a slow reference loop, so with it 4-bit weights run with bfloat16 activations. Its cost grows with every row
(8 rows took as long as oneDNN's bfloat16 kernel, 16 rows twice as long), so linear.py
keeps a dense bfloat16 copy of the same dequantised weights for larger batches and
prompt chunks.
"""

import torch

GROUP_SIZE = 32


def int4_supported(weight: torch.Tensor) -> bool:
    out_features, in_features = weight.shape
    return (
        weight.device.type == "cpu"
        and hasattr(torch, "_weight_int4pack_mm_for_cpu")
        and in_features % GROUP_SIZE == 0
        and out_features % 16 == 0
    )


def quantize_int4(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, in) float weight -> codes (out, in) int32 in 0..15 and scale_zero
    (in / 32, out, 2) float32, so that w ≈ (code - 8)·scale + zero in each group."""
    out_features, in_features = weight.shape
    w = weight.float().reshape(out_features, in_features // GROUP_SIZE, GROUP_SIZE)
    lo, hi = w.amin(-1), w.amax(-1)
    scale = (hi - lo) / 15
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)  # a constant group: every code 0
    codes = torch.round((w - lo[..., None]) / safe[..., None]).clamp_(0, 15).to(torch.int32)
    scale_zero = torch.stack([scale, lo + 8 * scale], dim=-1).transpose(0, 1).contiguous()
    return codes.reshape(out_features, in_features), scale_zero


def dequantize_int4(codes: torch.Tensor, scale_zero: torch.Tensor) -> torch.Tensor:
    """The float32 (out, in) weight that codes and scale_zero stand for."""
    out_features, in_features = codes.shape
    sz = scale_zero.float().transpose(0, 1)  # (out, groups, 2)
    grouped = codes.float().view(out_features, in_features // GROUP_SIZE, GROUP_SIZE)
    return ((grouped - 8) * sz[..., :1] + sz[..., 1:]).view(out_features, in_features)


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Codes in the layout `int4_matmul` reads."""
    return torch._convert_weight_to_int4pack_for_cpu(codes, 2)


def int4_matmul(x: torch.Tensor, packed: torch.Tensor, scale_zero: torch.Tensor) -> torch.Tensor:
    """x (T, in) in scale_zero's dtype -> (T, out)."""
    return torch._weight_int4pack_mm_for_cpu(x.contiguous(), packed, GROUP_SIZE, scale_zero)
