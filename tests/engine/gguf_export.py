"""A transformers Qwen3 or Qwen3-MoE model written as a float32 GGUF file the way llama.cpp's
converter writes one: its tensor names from the gguf package's own map, experts stacked
(experts, out, in), and a placeholder BPE vocabulary (the tests feed token ids)."""

from pathlib import Path

import gguf
import numpy as np


def _tensors(model) -> dict[str, np.ndarray]:
    """Hugging Face names, with transformers 5's fused experts split back into gate, up and down."""
    out = {}
    for name, t in model.state_dict().items():
        a = t.detach().float().numpy()
        if name.endswith("mlp.experts.gate_up_proj"):
            half = a.shape[1] // 2
            out[name.replace("gate_up_proj", "gate_proj.weight")] = a[:, :half]
            out[name.replace("gate_up_proj", "up_proj.weight")] = a[:, half:]
        elif name.endswith("mlp.experts.down_proj"):
            out[name + ".weight"] = a
        else:
            out[name] = a
    return out


def write_gguf(model, path: Path) -> Path:
    c = model.config
    moe = c.model_type == "qwen3_moe"
    arch = gguf.MODEL_ARCH.QWEN3MOE if moe else gguf.MODEL_ARCH.QWEN3
    names = gguf.get_tensor_name_map(arch, c.num_hidden_layers)
    writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_block_count(c.num_hidden_layers)
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_key_length(c.head_dim)
    writer.add_value_length(c.head_dim)
    writer.add_rope_freq_base(c.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    if moe:
        writer.add_expert_count(c.num_experts)
        writer.add_expert_used_count(c.num_experts_per_tok)
        writer.add_expert_feed_forward_length(c.moe_intermediate_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(c.vocab_size)])
    for name, a in _tensors(model).items():
        gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, f"llama.cpp has no name for {name}"
        writer.add_tensor(gguf_name, np.ascontiguousarray(a))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
