"""The forward pass on CUDA: the weights of engine/cuda/model.py, fused kernels.

Per layer: the QKV projection of the normalised residual stream with RoPE + K/V store
into the paged cache (one kernel at batch 1, two beyond), attention over the block
tables (decode rows and prefill chunks, each one launch), the output projection added
into the residual stream, the gate/up projection of the normalised stream, and the down projection of
SiLU(gate)*up added into the stream. A step of a few rows does each projection in one
kernel with its norm, activation, RoPE or residual add fused in (linear.py), so a batch-1
layer is five kernels and the step costs little more than reading the weights once.

Qwen3's per-head Q/K norms run inside the RoPE kernel (rope_store.py); Qwen3-MoE's experts route on the
device (moe.py), so a decode step with experts is a graph too: a batch-1 layer's experts are three
kernels after the output projection (the router's logits with the norm in them, gate/up, down into the
stream), more rows' a norm, the router, routing, a sort, two grouped kernels and a combine.
"""

from dataclasses import dataclass

import torch

from engine.config import ModelConfig
from engine.cuda.decode_attention import decode_attention
from engine.cuda.flash import flash_prefill, flash_prefill_fresh
from engine.cuda.linear import RopeStore, project, qkv_rope_store
from engine.cuda.model import CudaExperts, CudaModel
from engine.cuda.moe import experts_add, experts_add_decode
from engine.cuda.norm import rms_norm
from engine.cuda.prefill_attention import prefill_attention


@dataclass
class CudaAttentionMetadata:
    slot_mapping: torch.Tensor  # (T,) int64 cache slot of every row; -1 stores nothing
    num_decode: int = 0  # the first num_decode rows are single-token queries
    decode_tables: torch.Tensor | None = None  # (num_decode, W) int32
    decode_lens: torch.Tensor | None = None  # (num_decode,) int32, context length incl. the new token
    prefill_tables: torch.Tensor | None = None  # (S, W) int32
    prefill_q_start: torch.Tensor | None = None  # (S,) int32
    prefill_q_len: torch.Tensor | None = None
    prefill_kv_len: torch.Tensor | None = None
    max_prefill_len: int = 0
    # (S + 1,) int32 cumulative chunk lengths from the first chunk row: set, prefill attention runs on
    # FlashAttention-4 (flash.py, where the runner chose it), else on the Triton kernel
    prefill_cu_seqlens: torch.Tensor | None = None
    # every chunk starts at position 0: FlashAttention-4 reads the step's own keys and values, not the cache
    prefill_fresh: bool = False


def attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    meta: CudaAttentionMetadata,
    scale: float,
    kv: tuple[torch.Tensor, torch.Tensor] | None = None,  # the step's own rotated K and V, (T, KVH, D) each
) -> torch.Tensor:
    out = torch.empty_like(q)
    if meta.num_decode:
        assert meta.decode_tables is not None and meta.decode_lens is not None, "decode rows come with their tables"
        decode_attention(q[: meta.num_decode], k_cache, v_cache, meta.decode_tables, meta.decode_lens, scale, out)
    if meta.max_prefill_len:
        assert (
            meta.prefill_tables is not None
            and meta.prefill_q_start is not None
            and meta.prefill_q_len is not None
            and meta.prefill_kv_len is not None
        ), "prefill chunks come with their tables"
        nd = meta.num_decode  # the chunks' rows follow the decode rows
        if meta.prefill_cu_seqlens is not None and kv is not None:
            k, v = kv
            flash_prefill_fresh(q[nd:], k[nd:], v[nd:], meta.prefill_cu_seqlens, meta.max_prefill_len, scale, out[nd:])
            return out
        if meta.prefill_cu_seqlens is not None:
            flash_prefill(
                q[nd:],
                k_cache,
                v_cache,
                meta.prefill_tables,
                meta.prefill_cu_seqlens,
                meta.prefill_kv_len,
                meta.max_prefill_len,
                scale,
                out[nd:],
            )
            return out
        prefill_attention(
            q,
            k_cache,
            v_cache,
            meta.prefill_tables,
            meta.prefill_q_start,
            meta.prefill_q_len,
            meta.prefill_kv_len,
            meta.max_prefill_len,
            scale,
            out,
        )
    return out


def experts_mlp(x: torch.Tensor, norm: torch.Tensor, experts: CudaExperts, c: ModelConfig) -> None:
    """The mixture of experts of the normalised stream, added into the stream in place: one row in three
    kernels that normalise it themselves, more rows normalised first."""
    args = (experts.router, experts.gate_up, experts.down, c.num_experts_per_tok, c.norm_topk_prob)
    if x.shape[0] == 1:
        experts_add_decode(x, norm, c.rms_norm_eps, *args)
        return
    h = rms_norm(x, norm, c.rms_norm_eps)
    experts_add(x, h, *args)


def forward(
    model: CudaModel,
    input_ids: torch.Tensor,  # (T,)
    positions: torch.Tensor,  # (T,)
    meta: CudaAttentionMetadata,
    k_cache: torch.Tensor,  # (layers, num_blocks, block_size, KVH, D)
    v_cache: torch.Tensor,
    logits_rows: torch.Tensor | None = None,
    ids: torch.Tensor | None = None,  # (rows,) int64: each row's greedy token is written here too
) -> torch.Tensor:  # (rows, vocab) float32
    c = model.config
    t = input_ids.shape[0]
    h, kvh, d = c.num_heads, c.num_kv_heads, c.head_dim
    eps = c.rms_norm_eps
    layers = model.layers
    x = model.embed.index_select(0, input_ids)  # the residual stream
    for i, layer in enumerate(layers):
        rope = RopeStore(positions, model.cos, model.sin, meta.slot_mapping, k_cache[i], v_cache[i], h, kvh, d)
        q, kv = qkv_rope_store(
            x, layer.qkv, layer.attn_norm, eps, layer.qkv_bias, rope, layer.qk_norm, keep_kv=meta.prefill_fresh
        )
        o = attention(q, k_cache[i], v_cache[i], meta, model.scale, kv)
        project(o.view(t, h * d), layer.o, residual=x)
        if layer.experts is not None:
            experts_mlp(x, layer.mlp_norm, layer.experts, c)
            continue
        assert layer.gate_up is not None and layer.down is not None
        act = project(x, layer.gate_up, norm=layer.mlp_norm, eps=eps, swiglu=True)
        project(act, layer.down, gated=act.shape[1] != layer.down.shape[1], residual=x)
    if logits_rows is not None:
        x = x.index_select(0, logits_rows)
    return project(x, model.lm_head, norm=model.norm, eps=eps, out_dtype=torch.float32, ids=ids)
