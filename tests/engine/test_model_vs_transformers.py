"""Our forward pass against transformers loading the same GGUF file."""

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
