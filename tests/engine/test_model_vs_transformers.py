"""Our forward pass against transformers: on the embedded GGUF file that both load, and on random
Qwen3 and Qwen3-MoE weights that transformers makes and the engine loads from safetensors and GGUF."""

import pytest
import torch

from engine import SamplingParams
from engine.linear import onednn_available
from tests.engine.conftest import make_engine

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "In 1969, 3 astronauts flew to the Moon; 2 of them walked on it.",
]


def _ref_logits(reference, ids):
    with torch.no_grad():
        return reference(torch.tensor([ids])).logits[0]


def test_batched_prompt_logits_match_transformers(engine, reference):
    prompts = [engine.encode(p) for p in PROMPTS]
    prompts.append(engine.encode_chat([{"role": "user", "content": "Write a haiku about rain."}]))
    ours = engine.prompt_logits(prompts)  # one flattened batch through the paged cache
    for ids, logits in zip(prompts, ours):
        ref = _ref_logits(reference, ids)
        assert logits.shape == ref.shape
        assert (logits - ref).abs().max().item() < 1e-3


@pytest.mark.parametrize("use_onednn", [True, False], ids=["onednn", "plain-matmul"])
def test_both_cpu_projection_kernels_match_transformers(checkpoint, reference, use_onednn):
    eng = make_engine(checkpoint, kv_cache_bytes=16 << 20, use_onednn=use_onednn)
    try:
        assert eng.model.packed == (use_onednn and onednn_available(eng.model.device))
        ids = eng.encode(PROMPTS[1])
        logits = eng.prompt_logits([ids])[0]
        assert (logits - _ref_logits(reference, ids)).abs().max().item() < 1e-3
    finally:
        eng.shutdown()


def test_greedy_32_tokens_match_transformers(engine, reference):
    ids = engine.encode_chat([{"role": "user", "content": "List three colours of the rainbow."}])
    with torch.no_grad():
        ref = reference.generate(torch.tensor([ids]), max_new_tokens=32, do_sample=False, min_new_tokens=32)
    expected = ref[0, len(ids) :].tolist()
    out = engine.generate([ids], SamplingParams(temperature=0, max_tokens=32, ignore_eos=True))[0]
    assert out.token_ids == expected
    assert out.usage.completion_tokens == 32


def test_cached_prefix_gives_the_same_logits_as_cold(checkpoint):
    eng = make_engine(checkpoint, kv_cache_bytes=64 << 20, max_num_batched_tokens=256)
    try:
        base = eng.encode(" ".join(PROMPTS * 4))  # ~120 tokens: several full blocks
        captured = []

        def capture(generated, logits):
            captured.append(logits.clone())
            return logits

        params = SamplingParams(temperature=0, max_tokens=1, logits_processor=capture)
        cold = eng.generate([base + [28, 253]], params)[0]  # first request: nothing cached
        assert cold.usage.cached_tokens == 0
        warm = eng.generate([base + [28, 253]], params)[0]
        assert warm.usage.cached_tokens >= len(base) - 16
        assert (captured[0] - captured[1]).abs().max().item() < 1e-4
        # And a prompt extending the cached one (lower-right-aligned mask over the prefix)
        # matches a cold computation of all positions.
        longer = base + eng.encode(" and then some more words arrive")
        hit = eng.generate([longer], params)[0]
        assert hit.usage.cached_tokens > 0
        cold_all = eng.prompt_logits([longer])[0]
        assert (captured[2] - cold_all[-1]).abs().max().item() < 1e-4
    finally:
        eng.shutdown()


# ---------------------------------------------------------------- Qwen3 and Qwen3-MoE, random weights

QWEN3_SHAPE = dict(
    vocab_size=320,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,  # wider than hidden / heads, as in Qwen3's own shapes
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
)
# Per model: what each loader is checked on. llama.cpp's qwen3moe has every layer sparse and
# always renormalises the top-k weights, so the GGUF file has those; the safetensors directory
# checks a dense layer among sparse ones and weights left as the softmax gives them.
QWEN3_CASES = [
    ("qwen3", "safetensors", {}),
    ("qwen3", "gguf", {}),
    ("qwen3_moe", "safetensors", {"mlp_only_layers": [1], "norm_topk_prob": False}),
    ("qwen3_moe", "gguf", {"norm_topk_prob": True}),
]


def _random_qwen3(kind: str, extra: dict):
    import transformers

    torch.manual_seed(0)
    if kind == "qwen3":
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**QWEN3_SHAPE, **extra))
    else:
        config = transformers.Qwen3MoeConfig(
            **QWEN3_SHAPE, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2, **extra
        )
        model = transformers.Qwen3MoeForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # not all ones, so that a forgotten or misplaced norm shows
                p.normal_(1.0, 0.3)
            elif name.endswith("mlp.gate.weight"):  # routers far from uniform: no near-ties between experts
                p.normal_(0.0, 0.5)
    return model.eval()


@pytest.mark.parametrize(("kind", "loader", "extra"), QWEN3_CASES, ids=[f"{k}-{f}" for k, f, _ in QWEN3_CASES])
def test_qwen3_logits_and_greedy_tokens_match_transformers(tmp_path, kind, loader, extra):
    from engine import Engine, EngineConfig, load_checkpoint
    from tests.engine.gguf_export import write_gguf

    model = _random_qwen3(kind, extra)
    if loader == "gguf":
        ckpt = load_checkpoint(write_gguf(model, tmp_path / "model.gguf"))
    else:
        model.save_pretrained(tmp_path)
        ckpt = load_checkpoint(tmp_path)
    c = ckpt.config
    assert ckpt.kind == loader and c.qk_norm and c.head_dim == 32
    sparse = tuple(i for i, layer in enumerate(model.model.layers) if hasattr(layer.mlp, "experts"))
    assert c.moe_layers == sparse and bool(sparse) == (kind == "qwen3_moe")
    assert c.norm_topk_prob == bool(extra.get("norm_topk_prob"))
    eng = Engine(ckpt, EngineConfig(kv_cache_bytes=1 << 20))
    try:
        prompts = [
            [3, 17, 250, 9, 9, 41, 7],
            [100, 101, 102, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
        ]
        for ids, logits in zip(prompts, eng.prompt_logits(prompts)):  # one flattened batch
            assert (logits - _ref_logits(model, ids)).abs().max().item() < 1e-4
        # Decode rows, one token at a time through the paged cache.
        out = eng.generate([prompts[1]], SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))[0]
        with torch.no_grad():
            ref = model.generate(torch.tensor([prompts[1]]), max_new_tokens=12, min_new_tokens=12, do_sample=False)
        assert out.token_ids == ref[0, len(prompts[1]) :].tolist()
    finally:
        eng.shutdown()
