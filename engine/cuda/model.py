"""The model's weights as the CUDA path keeps them: bf16 on the GPU, laid out for its kernels.

Built from a Checkpoint (Hugging Face names, (out, in) matrices) independently of the
CPU path's Model, so each path can lay its weights out for its own kernels: here Q/K/V
and gate/up are fused into one matrix each, and every matrix stays (out, in) contiguous,
as nn.Linear keeps it: the matrix-vector kernel of decode steps (linear.py) then reads
each output's weights as one contiguous row, with no split over the input dimension,
and larger steps are cuBLAS `F.linear`. A tied LM head is the embedding table itself.
Each Q and K head's rows are pair-ordered for RoPE (rows i and i + D/2 side by side), so
the decode projection rotates in its epilogue (linear.py). RoPE tables are float32
half-width cos/sin, what rope_store.py and linear.py read. Qwen3's per-head Q/K norm weights are
pair-ordered as the rows they scale are; a mixture-of-experts layer keeps its experts stacked,
each expert's gate and up fused as the dense MLP's are.
"""

from dataclasses import dataclass

import torch

from engine.config import ModelConfig
from engine.weights import Checkpoint


@dataclass
class CudaExperts:
    router: torch.Tensor  # (experts, hidden) float32
    gate_up: torch.Tensor  # (experts, 2 * moe_intermediate, hidden)
    down: torch.Tensor  # (experts, hidden, moe_intermediate)


@dataclass
class CudaLayer:
    attn_norm: torch.Tensor  # (hidden,)
    qkv: torch.Tensor  # (q_dim + 2 * kv_dim, hidden)
    qkv_bias: torch.Tensor | None
    o: torch.Tensor  # (hidden, q_dim)
    mlp_norm: torch.Tensor
    gate_up: torch.Tensor | None  # (2 * intermediate, hidden); None in a mixture-of-experts layer
    down: torch.Tensor | None  # (hidden, intermediate)
    qk_norm: torch.Tensor | None = None  # (H + KVH, D): Qwen3's norm weights, Q heads then K heads, pair-ordered
    experts: CudaExperts | None = None


def rope_pairs(t: torch.Tensor, heads: int, head_dim: int) -> torch.Tensor:
    """Reorder each head's rows (dim 0) from [0 .. D) to [0, D/2, 1, D/2 + 1, ...]."""
    order = torch.arange(head_dim, device=t.device).view(2, head_dim // 2).t().reshape(-1)
    return t.reshape(heads, head_dim, *t.shape[1:])[:, order].reshape(t.shape)


class CudaModel:
    def __init__(
        self, ckpt: Checkpoint, device: str = "cuda", dtype: torch.dtype = torch.bfloat16, max_len: int | None = None
    ):
        c: ModelConfig = ckpt.config
        assert c.head_dim & (c.head_dim - 1) == 0, "the Triton kernels need a power-of-two head_dim"
        self.config, self.device, self.dtype = c, torch.device(device), dtype
        w = ckpt.tensors

        def vec(name):
            return w[name].to(device=device, dtype=dtype).contiguous()

        def mat(t):
            return t.to(device=device, dtype=dtype).contiguous()

        self.embed = vec("model.embed_tokens.weight")
        self.lm_head = self.embed if c.tie_word_embeddings else mat(w["lm_head.weight"])  # (vocab, hidden)
        self.norm = vec("model.norm.weight")
        self.layers: list[CudaLayer] = []

        def fused_qkv(prefix, kind):  # Q and K pair-ordered for RoPE, then V
            q, k, v = (w[f"{prefix}self_attn.{n}_proj.{kind}"].to(device) for n in "qkv")
            return torch.cat([rope_pairs(q, c.num_heads, c.head_dim), rope_pairs(k, c.num_kv_heads, c.head_dim), v])

        for i in range(c.num_layers):
            p = f"model.layers.{i}."
            layer = CudaLayer(
                attn_norm=vec(p + "input_layernorm.weight"),
                qkv=mat(fused_qkv(p, "weight")),
                qkv_bias=fused_qkv(p, "bias").to(dtype) if c.qkv_bias else None,
                o=mat(w[p + "self_attn.o_proj.weight"]),
                mlp_norm=vec(p + "post_attention_layernorm.weight"),
                gate_up=None,
                down=None,
            )
            if c.qk_norm:
                q_norm, k_norm = (w[p + f"self_attn.{n}_norm.weight"].to(device) for n in "qk")
                heads = c.num_heads + c.num_kv_heads
                norms = torch.cat([q_norm.expand(c.num_heads, -1), k_norm.expand(c.num_kv_heads, -1)]).reshape(-1)
                layer.qk_norm = mat(rope_pairs(norms, heads, c.head_dim).view(heads, c.head_dim))
            if i in c.moe_layers:
                gates, ups = (w[p + f"mlp.experts.{n}_proj.weight"].to(device) for n in ("gate", "up"))
                layer.experts = CudaExperts(
                    router=w[p + "mlp.gate.weight"].to(device=device, dtype=torch.float32).contiguous(),
                    gate_up=mat(torch.cat([gates, ups], 1)),
                    down=mat(w[p + "mlp.experts.down_proj.weight"]),
                )
            else:
                layer.gate_up = mat(
                    torch.cat([w[p + "mlp.gate_proj.weight"].to(device), w[p + "mlp.up_proj.weight"].to(device)], 0)
                )
                layer.down = mat(w[p + "mlp.down_proj.weight"])
            self.layers.append(layer)
        length = max_len or c.max_position_embeddings
        inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.int64).float() / c.head_dim))
        freqs = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]  # as Hugging Face computes it
        self.cos, self.sin = freqs.cos().to(device), freqs.sin().to(device)
        self.scale = c.head_dim**-0.5

    def projections(self) -> dict[tuple[int, int, str], list[torch.Tensor]]:
        """(out, in, form) -> that matrix in every layer, for the projections larger steps give to a GEMM
        (engine/cuda/gemm.py): forms as forward.py uses them; a biased QKV stays with cuBLAS."""
        out: dict[tuple[int, int, str], list[torch.Tensor]] = {}

        def add(w: torch.Tensor | None, form: str) -> None:
            if w is not None:
                out.setdefault((*w.shape, form), []).append(w)

        for layer in self.layers:
            add(layer.qkv if layer.qkv_bias is None else None, "plain")
            add(layer.o, "residual")
            add(layer.gate_up, "plain")
            add(layer.gate_up, "swiglu")  # with SiLU·up in the GEMM's epilogue
            add(layer.down, "residual")
        add(self.lm_head, "fp32")
        return out
