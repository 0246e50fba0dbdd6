"""The forward pass on CUDA: the weights of engine/cuda/model.py, fused kernels.

Per layer: RMSNorm (fused with the residual add that precedes it), the QKV matmul,
RoPE + K/V store into the paged cache (one kernel), attention over the block
tables (decode rows and prefill chunks, each one launch), the output matmul, the
fused add + norm, the gate/up matmul, SiLU*up, the down matmul. Matmuls are cuBLAS
on bf16; everything between them is one Triton kernel each, which is what makes a
batch-1 decode step close to the time of reading the weights once.
"""

from dataclasses import dataclass

import torch

from engine.cuda.activation import silu_and_mul
from engine.cuda.decode_attention import decode_attention
from engine.cuda.model import CudaModel
from engine.cuda.norm import add_rms_norm, rms_norm
from engine.cuda.prefill_attention import prefill_attention
from engine.cuda.rope_store import rope_and_store


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


def attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, meta: CudaAttentionMetadata,
              scale: float) -> torch.Tensor:
    out = torch.empty_like(q)
    if meta.num_decode:
        decode_attention(q[: meta.num_decode], k_cache, v_cache, meta.decode_tables, meta.decode_lens, scale, out)
    if meta.max_prefill_len:
        prefill_attention(q, k_cache, v_cache, meta.prefill_tables, meta.prefill_q_start, meta.prefill_q_len,
                          meta.prefill_kv_len, meta.max_prefill_len, scale, out)
    return out


def forward(
    model: CudaModel,
    input_ids: torch.Tensor,  # (T,)
    positions: torch.Tensor,  # (T,)
    meta: CudaAttentionMetadata,
    k_cache: torch.Tensor,  # (layers, num_blocks, block_size, KVH, D)
    v_cache: torch.Tensor,
    logits_rows: torch.Tensor | None = None,
) -> torch.Tensor:  # (rows, vocab) float32
    c = model.config
    t = input_ids.shape[0]
    h, kvh, d = c.num_heads, c.num_kv_heads, c.head_dim
    eps = c.rms_norm_eps
    layers = model.layers
    x = model.embed.index_select(0, input_ids)  # the residual stream
    y = rms_norm(x, layers[0].attn_norm, eps)
    for i, layer in enumerate(layers):
        qkv = y @ layer.qkv if layer.qkv_bias is None else torch.addmm(layer.qkv_bias, y, layer.qkv)
        q = rope_and_store(qkv, positions, model.cos, model.sin, meta.slot_mapping, k_cache[i], v_cache[i], h, kvh, d)
        o = attention(q, k_cache[i], v_cache[i], meta, model.scale)
        y = add_rms_norm(o.view(t, h * d) @ layer.o, x, layer.mlp_norm, eps)
        a = silu_and_mul(y @ layer.gate_up)
        nxt = layers[i + 1].attn_norm if i + 1 < len(layers) else model.norm
        y = add_rms_norm(a @ layer.down, x, nxt, eps)
    if logits_rows is not None:
        y = y.index_select(0, logits_rows)
    return (y @ model.lm_head).float()
