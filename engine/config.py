"""Plain data describing a model's shape and how the engine should run it."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a llama-family decoder (Llama, SmolLM2, Qwen2, Qwen3, Qwen3-MoE)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = True
    qkv_bias: bool = False  # Qwen2 carries a bias on the Q, K and V projections.
    qk_norm: bool = False  # Qwen3: an RMSNorm over each Q and K head before RoPE
    # Mixture of experts (Qwen3-MoE): the layers in moe_layers route each token to
    # num_experts_per_tok of num_experts SwiGLU experts of width moe_intermediate_size; the
    # others keep the dense MLP of width intermediate_size.
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = False  # the chosen experts' weights renormalised to sum to one
    moe_layers: tuple[int, ...] = ()
    architecture: str = "llama"
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()

    def kv_bytes_per_token(self, dtype_bytes: int = 4) -> int:
        """Bytes of K and V one token occupies across all layers."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class EngineConfig:
    """Knobs of the engine itself; the defaults suit a small CPU box."""

    block_size: int = 16  # tokens per KV block; also the prefix cache's granularity
    kv_cache_bytes: int = 1 << 30  # memory budget the KV blocks are preallocated from
    max_num_batched_tokens: int = 512  # per-step token budget (chunked prefill cuts at this)
    max_num_seqs: int = 32  # sequences running at once
    max_model_len: int | None = None  # None: the model's own context length
    num_threads: int | None = None  # torch intra-op threads; None leaves torch's default
    device: str = "cpu"
    enable_prefix_cache: bool = True
    use_onednn: bool | None = None  # CPU kernel for projections (linear.py); None: time both, keep the faster
    # CPU weights: "float32" (matches transformers to 1e-3) or "int4" (4-bit projections with
    # bfloat16 activations and KV cache, several times faster decode; quant.py).
    weights: str = "float32"
    # Greedy decode with the device one step ahead of the host (engine/step.py): the next step runs
    # while the host does this one's bookkeeping. None: where it pays, the CUDA graph path; on
    # the CPU a step is done before the host moves on, so it only costs the step that a finished
    # request's row wastes.
    decode_ahead: bool | None = None
    step_stats_history: int = 4096  # how many per-step records to keep for a server to expose
    # CUDA projections of more than one row and prefill attention: "auto" times cuBLAS against quack's
    # Hopper GEMMs and the Triton prefill attention against FlashAttention-4 (the cuda-kernels extra, where
    # installed) at start and keeps the faster; "torch": cuBLAS and Triton only.
    cuda_kernels: str = "auto"

    def __post_init__(self):
        if self.cuda_kernels not in ("auto", "torch"):
            raise ValueError(f"EngineConfig.cuda_kernels must be 'auto' or 'torch', got {self.cuda_kernels!r}")
        if self.weights not in ("float32", "int4"):
            raise ValueError(f"EngineConfig.weights must be 'float32' or 'int4', got {self.weights!r}")
        kind = self.device.split(":")[0]
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"the device must be cpu, cuda or cuda:N, got {self.device!r}")
        if kind == "cuda" and self.weights == "int4":
            raise ValueError("int4 weights are the CPU path's; on cuda the weights are bfloat16")


# The shape of SmolLM2-135M, for benchmarking dummy weights where the GGUF file is absent.
SMOLLM2_135M = ModelConfig(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_layers=30,
    num_heads=9,
    num_kv_heads=3,
    head_dim=64,
    rope_theta=100000.0,
    rms_norm_eps=1e-5,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    bos_token_id=1,
    eos_token_ids=(2,),
)


def transformers_config(c: ModelConfig):
    """The same shape as a transformers config (LlamaConfig, or Qwen3MoeConfig for a model with experts):
    the reference the engine is checked and timed against."""
    import transformers

    # transformers 5's config signatures omit rope_theta, which they still accept (and 4.x requires).
    common: dict[str, Any] = dict(
        vocab_size=c.vocab_size,
        hidden_size=c.hidden_size,
        intermediate_size=c.intermediate_size,
        num_hidden_layers=c.num_layers,
        num_attention_heads=c.num_heads,
        num_key_value_heads=c.num_kv_heads,
        rope_theta=c.rope_theta,
        max_position_embeddings=c.max_position_embeddings,
        rms_norm_eps=c.rms_norm_eps,
        tie_word_embeddings=c.tie_word_embeddings,
    )
    if c.architecture != "qwen3_moe":
        return transformers.LlamaConfig(**common)
    return transformers.Qwen3MoeConfig(  # type: ignore[call-arg]
        **common,
        head_dim=c.head_dim,
        num_experts=c.num_experts,
        num_experts_per_tok=c.num_experts_per_tok,
        moe_intermediate_size=c.moe_intermediate_size,
        norm_topk_prob=c.norm_topk_prob,
        mlp_only_layers=[i for i in range(c.num_layers) if i not in c.moe_layers],
    )
