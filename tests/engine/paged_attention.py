"""Attention over the paged KV cache in float64, what the CUDA attention kernels (engine/cuda/
decode_attention.py, prefill_attention.py) must compute. Shared by the GPU test (test_cuda.py) and the CPU
interpreter's (test_cuda_interpreted.py)."""

import torch

from engine.attention import lower_right_causal_mask


def reference(q, k_cache, v_cache, table, kv_len: int, q_len: int, scale: float) -> torch.Tensor:
    """(q_len, H, D): the queries, the last q_len of kv_len tokens, against the first kv_len tokens of the
    blocks in table, each KV head shared by H / KVH query heads."""
    h, (kvh, d) = q.shape[1], k_cache.shape[2:]
    kk = k_cache[table].reshape(-1, kvh, d)[:kv_len].double().repeat_interleave(h // kvh, 1)
    vv = v_cache[table].reshape(-1, kvh, d)[:kv_len].double().repeat_interleave(h // kvh, 1)
    s = torch.einsum("qhd,lhd->hql", q.double(), kk) * scale
    s = s.masked_fill(~lower_right_causal_mask(q_len, kv_len, q.device)[None], float("-inf"))
    return torch.einsum("hql,lhd->qhd", s.softmax(-1), vv)
