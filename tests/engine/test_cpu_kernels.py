"""The engine's CPU kernels (engine/cpu/) against torch on the same numbers: the 4-bit and
8-bit projections with their fused prologues and residual add, and decode attention over a
paged cache. They run where the CPU has AVX512-VNNI and gcc is at hand (CI's machines do);
elsewhere the engine uses torch's kernels, which the rest of tests/engine covers."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.attention import AttentionMetadata
from engine.config import ModelConfig
from engine.cpu import build
from engine.cpu import quantized as qz
from engine.cpu.decode_attention import decode_attention
from engine.model import Model
from engine.quant import dequantize_int4, quantize_int4
from engine.weights import dummy_checkpoint

pytestmark = pytest.mark.skipif(
    build.unavailable_reason() is not None, reason=f"the engine's CPU kernels: {build.unavailable_reason()}"
)


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    """The kernels split rows (and decode attention's heads) between OpenMP threads: two here, so the split is
    what these tests check, though the rest of the suite runs one thread an engine (tests/conftest.py)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    return ((y - ref).abs().max() / ref.abs().max()).item()


@settings(max_examples=60, deadline=None)
@given(
    out=st.integers(1, 80),
    blocks=st.integers(1, 7),  # inputs in 64s: odd counts end in a two-group tail
    rows=st.integers(1, 11),  # past one tile of 8 rows
    prologue=st.sampled_from(["none", "rmsnorm", "swiglu"]),
    add=st.booleans(),
    bias=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_q4_matches_the_dense_product_of_its_own_weights(out, blocks, rows, prologue, add, bias, seed):
    g = torch.Generator().manual_seed(seed)
    in_features = 64 * blocks
    codes, scale_zero = quantize_int4(torch.randn(out, in_features, generator=g))
    b = torch.randn(out, generator=g) if bias else None
    w = qz.pack(codes, scale_zero, b)
    x = torch.randn(rows, in_features * (2 if prologue == "swiglu" else 1), generator=g)
    norm_w = torch.randn(in_features, generator=g)
    if prologue == "rmsnorm":
        f = F.rms_norm(x, (in_features,), norm_w, 1e-5)
    elif prologue == "swiglu":
        f = F.silu(x[:, :in_features]) * x[:, in_features:]
    else:
        f = x
    # The kernel's own weights: the codes with their float16 scales and offsets, w = d·q + m.
    scaled = codes.view(out, -1, 32) * w.d.float()[..., None]
    dense = (scaled + w.m.float()[..., None]).view(out, in_features)
    assert (dense - dequantize_int4(codes, scale_zero)).abs().max() < 1e-2 * dense.abs().max()
    ref = f @ dense.T + (0 if b is None else b)
    base = torch.randn(rows, out, generator=g)
    y = qz.linear(x, w, prologue, norm_w, 1e-5, out=base.clone() if add else None)
    # The activations are rounded to 8 bits per group of 32, as llama.cpp does: each by at most
    # half a step, max|group| / 254. The offsets meet the exact sum of each group, so the
    # product is off by at most Σ step·|d·q|.
    step = f.view(rows, -1, 32).abs().amax(-1).repeat_interleave(32, dim=-1) / 254
    bound = step @ scaled.reshape(out, in_features).abs().T
    assert torch.all(((y - base if add else y) - ref).abs() <= 1.001 * bound + 1e-4 * ref.abs().max())


def test_q8_recovers_its_own_codes_and_matches_the_dense_product():
    g = torch.Generator().manual_seed(0)
    w = qz.pack8(torch.randn(300, 576, generator=g))
    dense = qz.dequantize8(w)
    assert torch.equal(qz.pack8(dense).codes, w.codes)  # a Q8_0 weight comes back to its codes
    norm_w = torch.randn(576, generator=g)
    for rows in (1, 4, 9):
        x = torch.randn(rows, 576, generator=g)
        assert _rel_err(qz.linear8(x, w, norm_w, 1e-5), F.rms_norm(x, (576,), norm_w, 1e-5) @ dense.T) < 0.04


def test_the_embedded_files_output_projection_keeps_its_q8_0_codes(checkpoint):
    head = checkpoint.tensors["model.embed_tokens.weight"]
    assert torch.equal(qz.dequantize8(qz.pack8(head)), head.float())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decode_attention_matches_sdpa_over_scattered_blocks(dtype):
    g = torch.Generator().manual_seed(0)
    heads, kv_heads, dim, block = 9, 3, 64, 16
    k_cache, v_cache = torch.randn(2, 40, block, kv_heads, dim, generator=g).to(dtype).unbind(0)
    lens = [1, 17, 150]  # a first token, one past a block, several blocks
    order = torch.randperm(40, generator=g)
    tables, start = [], 0
    for n in lens:
        need = -(-n // block)
        tables.append(order[start : start + need].tolist() + [0] * (10 - need))
        start += need
    table = torch.tensor(tables, dtype=torch.long)
    slots = torch.tensor([table[i, (n - 1) // block] * block + (n - 1) % block for i, n in enumerate(lens)])
    q = torch.randn(3, heads, dim, generator=g)
    k, v = torch.randn(2, 3, kv_heads, dim, generator=g).unbind(0)
    out = decode_attention(q, k, v, k_cache, v_cache, slots, table, torch.tensor(lens, dtype=torch.int32), 0.125)
    flat_k, flat_v = k_cache.view(-1, kv_heads, dim), v_cache.view(-1, kv_heads, dim)
    # The new K/V are stored first, rounded as torch rounds to the cache's dtype.
    assert torch.equal(flat_k[slots], k.to(dtype)) and torch.equal(flat_v[slots], v.to(dtype))
    for i, n in enumerate(lens):
        positions = table[i].repeat_interleave(block) * block + torch.arange(block).repeat(10)
        kk, vv = flat_k[positions[:n]].transpose(0, 1).float(), flat_v[positions[:n]].transpose(0, 1).float()
        ref = F.scaled_dot_product_attention(q[i][:, None], kk, vv, scale=0.125, enable_gqa=True)[:, 0]
        assert (out[i] - ref).abs().max() < 1e-5, n


@pytest.mark.parametrize("kv_dtype", [torch.float32, torch.bfloat16])
def test_a_decode_step_in_one_call_equals_the_step_op_by_op(kv_dtype):
    """decode_layers.c runs every layer of a decode step of up to 8 rows in one call; model.py
    calling the same kernels one projection at a time gives the same logits, bit for bit (its
    RoPE rounds as torch's does). Rows of different context lengths over scattered blocks, three
    layers, GQA and Qwen2's QKV bias, a float32 and a bfloat16 cache."""
    layers = 3
    config = ModelConfig(
        vocab_size=300,
        hidden_size=128,
        intermediate_size=256,
        num_layers=layers,
        num_heads=2,
        num_kv_heads=1,
        head_dim=64,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        qkv_bias=True,
    )
    model = Model(dummy_checkpoint(config, seed=3), "cpu", torch.float32, 256, int4=True)
    assert model.decode_layers is not None
    g = torch.Generator().manual_seed(0)
    block, lens = 16, [1, 20, 45]
    cache = torch.randn(2, layers, 12, block, 1, 64, generator=g).to(kv_dtype)  # earlier tokens' K/V
    order = torch.randperm(12, generator=g).tolist()
    tables = [order[0:1] + [0, 0], order[1:3] + [0], order[3:6]]
    slots = [tables[i][(n - 1) // block] * block + (n - 1) % block for i, n in enumerate(lens)]
    meta = AttentionMetadata(
        torch.tensor(slots),
        num_decode=3,
        decode_block_tables=torch.tensor(tables),
        decode_lens=torch.tensor(lens, dtype=torch.int32),
    )
    ids, positions = torch.tensor([5, 77, 211]), torch.tensor(lens) - 1
    one_call = model.forward(ids, positions, meta, tuple(cache.clone()))
    model.decode_layers = None
    op_by_op = model.forward(ids, positions, meta, tuple(cache.clone()))
    assert torch.equal(one_call, op_by_op)


def test_loading_the_kernels_leaves_the_process_floating_point_alone():
    # A library linked with -ffast-math would turn on flush-to-zero process-wide on load.
    assert not isinstance(build.library(), str)
    assert 5e-324 * 1.0 > 0 and torch.tensor([1e-40]).mul(1.0).item() > 0


def test_a_compiler_that_fails_gives_the_reason_and_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", "/bin/false")
    reason = build.library.__wrapped__()
    assert isinstance(reason, str) and reason.startswith("building the CPU kernels failed")
    assert not list(tmp_path.rglob("*.so"))


def test_a_cache_directory_that_cannot_be_written_gives_the_reason(tmp_path, monkeypatch):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_directory))
    reason = build.library.__wrapped__()
    assert isinstance(reason, str) and "could not be built or loaded" in reason and str(not_a_directory) in reason


def test_the_kernels_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(build.SWITCH, "0")
    assert build.library.__wrapped__() == f"turned off by {build.SWITCH}=0"
