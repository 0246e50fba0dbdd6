"""Attention over a paged KV cache: the one function a CUDA kernel would replace.

The cache is two tensors per layer, (num_blocks, block_size, kv_heads, head_dim).
A token's slot is block_id * block_size + offset. New K/V are written to their
slots first; then each query attends over its sequence's whole context, gathered
from the blocks in the sequence's block table.

Decode queries (one token per sequence) are batched into one SDPA call with block
tables padded to the longest context and a key-padding mask made from their lengths; with
float32 queries over a float32 or bfloat16 cache, where the engine's CPU kernels run
(cpu/build.py), into one call of cpu/decode_attention.c instead, which reads the blocks in
place. Prefill chunks run
one SDPA call each; a chunk that follows a cached prefix needs a causal mask aligned
to the lower right (query i sees keys up to i + prefix), because SDPA's is_causal is
aligned to the upper left.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.cpu.build import unavailable_reason
from engine.cpu.decode_attention import decode_attention


@dataclass
class PrefillSlice:
    q_start: int  # first row of this sequence in the flattened batch
    q_len: int  # tokens computed this step
    kv_len: int  # context length after this step (cached prefix + q_len)
    block_table: torch.Tensor  # (ceil(kv_len / block_size),) block ids
    mask: torch.Tensor | None  # (q_len, kv_len) bool, lower-right causal; None when kv_len == q_len


@dataclass
class AttentionMetadata:
    """Everything attention needs about one step, built once and shared by all layers."""

    slot_mapping: torch.Tensor  # (T,) cache slot of every token in the flattened batch
    num_decode: int = 0  # the first num_decode rows are single-token decode queries
    decode_block_tables: torch.Tensor | None = None  # (B, max_blocks), padded with block 0
    decode_lens: torch.Tensor | None = None  # (B,) int32 context lengths, the new token included
    prefills: tuple[PrefillSlice, ...] = ()


def lower_right_causal_mask(q_len: int, kv_len: int, device=None) -> torch.Tensor:
    """mask[i, j] is True where query i (at absolute position kv_len - q_len + i) may see key j."""
    q_pos = torch.arange(kv_len - q_len, kv_len, device=device)
    return torch.arange(kv_len, device=device)[None, :] <= q_pos[:, None]


def build_decode_mask(context_lens: torch.Tensor, max_len: int) -> torch.Tensor:
    return (torch.arange(max_len, device=context_lens.device)[None, :] < context_lens[:, None])[:, None, None, :]


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs) -> torch.Tensor:
    """SDPA in float32 whatever the cache holds: torch's CPU bfloat16 kernel took 6x as long for
    16 decode queries, and a 2,000-token prefill ran 15% faster in float32."""
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), **kwargs).to(q.dtype)


def paged_attention(
    q: torch.Tensor,  # (T, H, D)
    k: torch.Tensor,  # (T, KVH, D)
    v: torch.Tensor,  # (T, KVH, D)
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D)
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:  # (T, H, D)
    # Gathers use index_select: advanced indexing (`cache[table]`) takes a parallel
    # path on CPU that was ~100x slower for these small gathers.
    num_blocks, block_size, kvh, d = k_cache.shape
    gqa = q.shape[1] != kvh
    parts = []
    b = meta.num_decode
    c_kernel = q.dtype == torch.float32 and k_cache.dtype in (torch.float32, torch.bfloat16)
    in_c = bool(b) and c_kernel and k_cache.device.type == "cpu" and unavailable_reason() is None
    if in_c:
        assert meta.decode_block_tables is not None and meta.decode_lens is not None
        tables, lens = meta.decode_block_tables, meta.decode_lens
        parts.append(
            decode_attention(q[:b], k[:b], v[:b], k_cache, v_cache, meta.slot_mapping[:b], tables, lens, scale)
        )
        if q.shape[0] > b:  # the prefill rows' K/V
            k_cache.view(-1, kvh, d).index_copy_(0, meta.slot_mapping[b:], k[b:].to(k_cache.dtype))
            v_cache.view(-1, kvh, d).index_copy_(0, meta.slot_mapping[b:], v[b:].to(v_cache.dtype))
    else:  # (the cache may be narrower than the activations: bfloat16 under float32 4-bit layers)
        k_cache.view(-1, kvh, d).index_copy_(0, meta.slot_mapping, k.to(k_cache.dtype))
        v_cache.view(-1, kvh, d).index_copy_(0, meta.slot_mapping, v.to(v_cache.dtype))
    if b and not in_c:
        assert meta.decode_block_tables is not None and meta.decode_lens is not None, (
            "a step with decode rows carries their block tables and lengths"
        )
        flat = meta.decode_block_tables.view(-1)
        kk = k_cache.index_select(0, flat).view(b, -1, kvh, d).transpose(1, 2)  # (B, KVH, L, D)
        vv = v_cache.index_select(0, flat).view(b, -1, kvh, d).transpose(1, 2)
        qq = q[:b].unsqueeze(2)  # (B, H, 1, D)
        mask = build_decode_mask(meta.decode_lens, kk.shape[2])  # (B, 1, 1, L): the key is real
        out = _sdpa(qq, kk, vv, attn_mask=mask, scale=scale, enable_gqa=gqa)
        parts.append(out.squeeze(2))
    for p in meta.prefills:
        qq = q[p.q_start : p.q_start + p.q_len].transpose(0, 1).unsqueeze(0)  # (1, H, q, D)
        if p.mask is None:  # no cached prefix: the chunk's own K/V are the whole context
            kk = k[p.q_start : p.q_start + p.q_len].transpose(0, 1).unsqueeze(0)
            vv = v[p.q_start : p.q_start + p.q_len].transpose(0, 1).unsqueeze(0)
            out = _sdpa(qq, kk, vv, is_causal=True, scale=scale, enable_gqa=gqa)
        else:
            kk = k_cache.index_select(0, p.block_table).view(-1, kvh, d)[: p.kv_len].transpose(0, 1).unsqueeze(0)
            vv = v_cache.index_select(0, p.block_table).view(-1, kvh, d)[: p.kv_len].transpose(0, 1).unsqueeze(0)
            out = _sdpa(qq, kk, vv, attn_mask=p.mask, scale=scale, enable_gqa=gqa)
        parts.append(out.squeeze(0).transpose(0, 1))
    return parts[0] if len(parts) == 1 else torch.cat(parts, 0)
