"""The one rule by which an optional CUDA kernel (quack's GEMMs, FlashAttention-4) replaces the default at
start: its result near the default's and faster by a margin. Plain tensors: runs without a GPU."""

import torch
from hypothesis import given
from hypothesis import strategies as st

from engine.cuda import gemm

REF = torch.linspace(-1.0, 1.0, 64).reshape(8, 8)


@given(
    noise=st.floats(0.0, 0.05),
    speedup=st.floats(0.5, 2.0),
)
def test_an_optional_kernel_wins_only_when_near_and_faster(noise, speedup):
    candidate = REF + noise * REF.norm() / 8 * torch.ones_like(REF)  # relative error `noise`
    err = gemm.relative_error(candidate, REF)
    assert abs(err - noise) < 1e-4
    won = gemm.accepted(candidate, REF, 1.0 / speedup, 1.0)
    if won:
        assert err < gemm.MAX_ERROR and speedup > gemm.MIN_GAIN
    if noise < 0.99 * gemm.MAX_ERROR and speedup > 1.01 * gemm.MIN_GAIN:
        assert won


def test_bf16_results_compare_in_float32():
    assert gemm.relative_error(REF.bfloat16(), REF) < 1e-2
    assert not gemm.accepted(REF.bfloat16() * 1.02, REF, 0.5, 1.0)
