"""4-bit weights: the embedded file's Q4_1 codes survive exactly, other weights round to the
nearest level, and an int4 engine stays close to the float32 one."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import SamplingParams
from engine.cpu.build import unavailable_reason
from engine.linear import INT4_ROWS, linear, make_linear
from engine.quant import GROUP_SIZE, dequantize_int4, quantize_int4
from tests.engine.conftest import make_engine


def test_the_embedded_files_q4_1_weights_are_recovered_exactly(checkpoint):
    for name in ("self_attn.q_proj", "self_attn.k_proj", "mlp.gate_proj", "mlp.down_proj"):
        for layer in (0, 17, 29):
            w = checkpoint.tensors[f"model.layers.{layer}.{name}.weight"]
            codes, scale_zero = quantize_int4(w)
            assert torch.equal(dequantize_int4(codes, scale_zero), w), (layer, name)


@settings(max_examples=40, deadline=None)
@given(
    out_groups=st.integers(1, 3),
    in_groups=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    spread=st.floats(1e-3, 10.0),
    constant_rows=st.booleans(),
)
def test_other_weights_round_to_the_nearest_of_16_levels(out_groups, in_groups, seed, spread, constant_rows):
    w = torch.randn(16 * out_groups, GROUP_SIZE * in_groups, generator=torch.Generator().manual_seed(seed)) * spread
    if constant_rows:
        w[0] = 0.5  # a group whose min equals its max
    codes, scale_zero = quantize_int4(w)
    assert codes.min() >= 0 and codes.max() <= 15
    step = scale_zero[..., 0].transpose(0, 1).repeat_interleave(GROUP_SIZE, dim=1)  # per weight
    assert torch.all((dequantize_int4(codes, scale_zero) - w).abs() <= step / 2 + 1e-5 * spread)


def test_int4_projections_match_the_dense_product_of_the_same_weights_at_every_batch_size():
    g = torch.Generator().manual_seed(0)
    w, bias = torch.randn(96, 128, generator=g), torch.randn(96, generator=g)
    lin = make_linear(w, bias, "cpu", torch.bfloat16, use_onednn=True, int4=True)
    assert lin.kind == "int4" and lin.dense is not None
    ref_weight = dequantize_int4(*quantize_int4(w))
    for rows in (1, INT4_ROWS, INT4_ROWS + 1, 64):  # the 4-bit kernel, then the dense copy
        x = torch.randn(rows, 128, generator=g).bfloat16()
        ref = x.float() @ ref_weight.T + bias
        assert (linear(x, lin).float() - ref).abs().max() < 0.02 * ref.abs().max(), rows


@pytest.mark.parametrize("kernels", ["engine", "torch"])
def test_an_int4_engine_stays_close_to_float32(checkpoint, engine, kernels, monkeypatch):
    if kernels == "engine" and unavailable_reason() is not None:
        pytest.skip(f"the engine's CPU kernels: {unavailable_reason()}")
    if kernels == "torch":  # as on a CPU without AVX512-VNNI
        monkeypatch.setattr("engine.linear.unavailable_reason", lambda: "switched off by the test")
    small = make_engine(checkpoint, kv_cache_bytes=32 << 20, weights="int4")
    try:
        assert small.kv.bytes_per_token * 2 == engine.kv.bytes_per_token  # a bfloat16 KV cache
        assert small.model.layers[0].qkv.kind == ("q4" if kernels == "engine" else "int4")
        texts = ["The quick brown fox jumps over the lazy dog. " * 3, "def add(a, b):\n    return a + b\n" * 2]
        prompts = [engine.encode(t) for t in texts] + [
            engine.encode_chat([{"role": "user", "content": "Write a haiku about rain."}])
        ]
        ref, ours = torch.cat(engine.prompt_logits(prompts)), torch.cat(small.prompt_logits(prompts))
        # Rounded activations flip the top token where two are nearly tied (4 of these 94 positions
        # with bfloat16 ones).
        assert (ref.argmax(-1) == ours.argmax(-1)).float().mean() >= 0.9
        p, q = ref.log_softmax(-1), ours.log_softmax(-1)
        assert (p.exp() * (p - q)).sum(-1).mean() < 0.01  # KL(float32 || int4), nats per token
        # Decoding one row at a time runs the 4-bit kernel itself: float32, fed the same
        # tokens, picks the same next token almost everywhere.
        chat = prompts[-1]
        out = small.generate([chat], SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))[0].token_ids
        forced = engine.prompt_logits([chat + out[:-1]])[0][len(chat) - 1 :].argmax(-1)
        assert (forced == torch.tensor(out)).float().mean() >= 0.9
    finally:
        small.shutdown()
