"""Weights from a Hugging Face safetensors directory (Llama and Qwen2 with its QKV bias),
checked against transformers running the same random weights."""

import pytest
import torch

from engine import Engine, EngineConfig, ModelLoadError, load_checkpoint


def _tiny_hf_model(kind: str):
    import transformers

    common = dict(
        vocab_size=320,
        hidden_size=64,
        intermediate_size=112,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    if kind == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    with torch.no_grad():  # random biases so that a forgotten bias would show
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.5)
    return model.eval()


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_safetensors_directory_matches_transformers(tmp_path, kind):
    model = _tiny_hf_model(kind)
    model.save_pretrained(tmp_path)
    ckpt = load_checkpoint(tmp_path)
    assert ckpt.kind == "safetensors" and ckpt.config.qkv_bias == (kind == "qwen2")
    eng = Engine(ckpt, EngineConfig(kv_cache_bytes=1 << 20))
    try:
        prompts = [
            [3, 17, 250, 9, 9, 41, 7],
            [100, 101, 102, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
        ]
        for ids, logits in zip(prompts, eng.prompt_logits(prompts)):
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0]
            assert (logits - ref).abs().max().item() < 1e-4
        from engine import SamplingParams

        out = eng.generate([prompts[1]], SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))[0]
        with torch.no_grad():
            ref_ids = model.generate(torch.tensor([prompts[1]]), max_new_tokens=12, min_new_tokens=12, do_sample=False)
        assert out.token_ids == ref_ids[0, len(prompts[1]) :].tolist()
    finally:
        eng.shutdown()


def test_broken_safetensors_directory_names_the_file(tmp_path):
    model = _tiny_hf_model("llama")
    model.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="model.safetensors"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt_neox"}')
    with pytest.raises(ModelLoadError, match="unsupported model_type 'gpt_neox'"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "qwen3", "use_sliding_window": true}')
    with pytest.raises(ModelLoadError, match="sliding-window attention is not implemented"):
        load_checkpoint(tmp_path)


def test_gguf_config_and_unpermuted_rope_weights(checkpoint):
    c = checkpoint.config
    assert (c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim) == (30, 576, 9, 3, 64)
    assert c.vocab_size == 49152 and c.rope_theta == 100000.0 and c.tie_word_embeddings
    assert c.kv_bytes_per_token() == 2 * 30 * 3 * 64 * 4
    # Applying llama.cpp's permutation to our Q weights gives back the raw GGUF rows.
    import gguf

    from engine import default_model_path

    raw = next(t for t in gguf.GGUFReader(default_model_path()).tensors if t.name == "blk.0.attn_q.weight")
    raw = torch.from_numpy(gguf.quants.dequantize(raw.data, raw.tensor_type).copy())
    ours = checkpoint.tensors["model.layers.0.self_attn.q_proj.weight"]
    n = c.num_heads
    permuted = ours.reshape(n, 2, ours.shape[0] // n // 2, -1).swapaxes(1, 2).reshape(ours.shape)
    assert torch.equal(permuted, raw) and not torch.equal(ours, raw)
