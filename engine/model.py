"""The forward pass of a llama-family decoder over a flattened batch of tokens.

Tokens of all scheduled sequences are concatenated into one (T,) batch with their
positions; attention reads and writes the paged KV cache through `paged_attention`.
Weights are prepared once (linear.py): Q/K/V fused into one projection and gate/up
into another, each packed for oneDNN on CPU or pre-transposed for a plain matmul, in
float32; or, with int4=True, as 4-bit codes (quant.py) with float32 activations where the
engine's CPU kernels run (cpu/), bfloat16 ones for torch's kernel elsewhere. A step of up to
Q4_ROWS decode rows on the engine's kernels runs every layer in one call (cpu/decode_layers.c);
any other step goes layer by layer here, through the same kernels where they apply, and so
does every step of a model with per-head Q/K norms (Qwen3) or experts (Qwen3-MoE, moe.py), which
that kernel does not have.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.attention import AttentionMetadata, paged_attention
from engine.config import ModelConfig
from engine.cpu.build import unavailable_reason
from engine.cpu.decode_layers import decode_layers, layer_structs
from engine.linear import (
    Q4_ROWS,
    Linear,
    linear,
    make_head,
    make_linear,
    onednn_available,
    onednn_is_faster,
)
from engine.moe import mixture, route
from engine.weights import Checkpoint


@dataclass
class Experts:
    router: torch.Tensor  # (experts, hidden) float32: routing stays full precision under 4-bit experts
    gate_up: list[Linear]  # per expert, hidden -> 2 * moe_intermediate
    down: list[Linear]  # per expert, moe_intermediate -> hidden


@dataclass
class LayerWeights:
    attn_norm: torch.Tensor  # (hidden,)
    qkv: Linear  # hidden -> q_dim + 2 * kv_dim (with Qwen2's bias)
    o: Linear  # q_dim -> hidden
    mlp_norm: torch.Tensor
    gate_up: Linear | None  # hidden -> 2 * intermediate; None in a mixture-of-experts layer
    down: Linear | None  # intermediate -> hidden
    qk_norm: torch.Tensor | None = None  # (H + KVH, D): Qwen3's per-head norm weights, Q heads then K heads
    experts: Experts | None = None


def rope_tables(config: ModelConfig, device, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin of every position, (length, D), computed in float32 the way
    Hugging Face does; the sin table carries rotate_half's minus sign in its first half."""
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]  # (L, D/2)
    cos, sin = freqs.cos(), freqs.sin()
    return torch.cat((cos, cos), -1).to(device), torch.cat((-sin, sin), -1).to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """rotate_half RoPE on (T, heads, D) with tables (T, 1, D): x*cos + rotate_half(x)*sin,
    in three kernels (the sign of rotate_half lives in the table)."""
    half = x.shape[-1] // 2
    swapped = torch.cat((x[..., half:], x[..., :half]), dim=-1)
    return torch.addcmul(x * cos, swapped, signed_sin)


class Model:
    def __init__(
        self,
        ckpt: Checkpoint,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
        max_len: int | None = None,
        use_onednn: bool | None = None,  # None: whichever CPU kernel measures faster here
        int4: bool = False,  # 4-bit projections: dtype float32 with the engine's kernels, else bfloat16
    ):
        c = ckpt.config
        self.config = c
        self.device = torch.device(device)
        self.dtype = dtype
        if use_onednn is None:
            # bfloat16 has no fast plain-matmul path on CPU (4x slower than oneDNN's here),
            # so with int4 the dense output projection always takes oneDNN where it exists.
            use_onednn = int4 or onednn_is_faster(self.device)
        onednn = use_onednn and onednn_available(self.device)

        def lin(weight, bias=None):
            return make_linear(weight, bias, device, dtype, onednn, int4)

        w = ckpt.tensors
        self.embed = w["model.embed_tokens.weight"].to(device=device, dtype=dtype).contiguous()
        # The output projection keeps 8 bits or more: GGUF files store it (tied to the embedding)
        # so, and 4 bits would change the model.
        head = w["model.embed_tokens.weight"] if c.tie_word_embeddings else w["lm_head.weight"]
        self.lm_head = make_head(head, device, dtype, onednn, int4)
        self.norm = w["model.norm.weight"].to(device=device, dtype=dtype)
        self.layers: list[LayerWeights] = []
        for i in range(c.num_layers):
            p = f"model.layers.{i}."
            qkv = torch.cat([w[p + f"self_attn.{n}_proj.weight"] for n in "qkv"], 0)
            bias = torch.cat([w[p + f"self_attn.{n}_proj.bias"] for n in "qkv"]) if c.qkv_bias else None
            layer = LayerWeights(
                attn_norm=w[p + "input_layernorm.weight"].to(device, dtype),
                qkv=lin(qkv, bias),
                o=lin(w[p + "self_attn.o_proj.weight"]),
                mlp_norm=w[p + "post_attention_layernorm.weight"].to(device, dtype),
                gate_up=None,
                down=None,
            )
            if c.qk_norm:
                q_norm, k_norm = (w[p + f"self_attn.{n}_norm.weight"] for n in "qk")
                layer.qk_norm = torch.cat([q_norm.expand(c.num_heads, -1), k_norm.expand(c.num_kv_heads, -1)])
                layer.qk_norm = layer.qk_norm.to(device, dtype)
            if i in c.moe_layers:
                gates, ups, downs = (w[p + f"mlp.experts.{n}_proj.weight"] for n in ("gate", "up", "down"))
                layer.experts = Experts(
                    router=w[p + "mlp.gate.weight"].to(device, torch.float32),
                    gate_up=[lin(torch.cat([g, u], 0)) for g, u in zip(gates, ups)],
                    down=[lin(d) for d in downs],
                )
            else:
                layer.gate_up = lin(torch.cat([w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]], 0))
                layer.down = lin(w[p + "mlp.down_proj.weight"])
            self.layers.append(layer)
        self.packed = self.lm_head.kind == "onednn"
        plain = not c.qk_norm and not c.moe_layers  # the layers decode_layers.c computes
        self.decode_layers = layer_structs(self.layers) if plain and unavailable_reason() is None else None
        self.cos, self.sin = (t.to(dtype) for t in rope_tables(c, device, max_len or c.max_position_embeddings))
        self.scale = c.head_dim**-0.5

    def forward(
        self,
        input_ids: torch.Tensor,  # (T,)
        positions: torch.Tensor,  # (T,)
        meta: AttentionMetadata,
        kv_cache: tuple[torch.Tensor, torch.Tensor],  # each (layers, blocks, block_size, kv_heads, D)
        logits_rows: torch.Tensor | None = None,  # rows to compute logits for; None = all
    ) -> torch.Tensor:
        c = self.config
        t = input_ids.shape[0]
        h, d = c.num_heads, c.head_dim
        q_dim, kv_dim = h * d, c.num_kv_heads * d
        eps = c.rms_norm_eps
        cos = self.cos.index_select(0, positions)[:, None, :]
        sin = self.sin.index_select(0, positions)[:, None, :]
        k_cache, v_cache = kv_cache
        x = self.embed.index_select(0, input_ids)
        if self.decode_layers is not None and meta.num_decode == t <= Q4_ROWS:
            # A step of decode rows only: every layer in one call of the engine's CPU kernel.
            # (cos and sin are (T, 1, D) views of contiguous (T, D) rows.)
            heads = (h, c.num_kv_heads, d)
            decode_layers(self.decode_layers, x, heads, eps, cos, sin, kv_cache, meta, self.scale)
            return self._logits(x, logits_rows)
        for i, layer in enumerate(self.layers):
            qkv = linear(x, layer.qkv, norm=(layer.attn_norm, eps))
            # Q and K heads are normalised and rotate together: over (T, H + KVH, D).
            qk = qkv[:, : q_dim + kv_dim].view(t, h + c.num_kv_heads, d)
            if layer.qk_norm is not None:
                qk = F.rms_norm(qk, (d,), None, eps) * layer.qk_norm
            qk = apply_rope(qk, cos, sin)
            v = qkv[:, q_dim + kv_dim :].view(t, c.num_kv_heads, d)
            attn = paged_attention(qk[:, :h], qk[:, h:], v, k_cache[i], v_cache[i], meta, self.scale)
            x = linear(attn.reshape(t, q_dim), layer.o, residual=x)
            if layer.experts is not None:
                x = x + self._experts(F.rms_norm(x, (x.shape[-1],), layer.mlp_norm, eps), layer.experts)
                continue
            assert layer.gate_up is not None and layer.down is not None
            gate_up = linear(x, layer.gate_up, norm=(layer.mlp_norm, eps))
            x = linear(gate_up, layer.down, swiglu=True, residual=x)
        return self._logits(x, logits_rows)

    def _experts(self, x: torch.Tensor, experts: Experts) -> torch.Tensor:
        c = self.config
        weights, ids = route(x, experts.router, c.num_experts_per_tok, c.norm_topk_prob)

        def expert(e: int, rows: torch.Tensor) -> torch.Tensor:
            return linear(linear(rows, experts.gate_up[e]), experts.down[e], swiglu=True)

        return mixture(x, weights, ids, expert)

    def _logits(self, x: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        if rows is not None:
            x = x.index_select(0, rows)
        return linear(x, self.lm_head, norm=(self.norm, self.config.rms_norm_eps)).float()
