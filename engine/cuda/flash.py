"""Prefill attention on FlashAttention-4's Hopper kernel (flash-attn-4, of the optional `cuda-kernels`
extra: written in the CUTLASS DSL, compiled on first use) where it measured faster than the Triton
kernel of prefill_attention.py.

Same inputs, same result: the step's prefill chunks are packed after its decode rows (batch.py), so
their queries are one varlen batch (cumulative lengths from 0 at the first chunk row); keys and values
are read through each chunk's block table (FlashAttention's paged KV, a page being the cache's block)
up to the chunk's kv_len; causality is aligned to the lower right in both. Where every chunk of a step
starts at position 0 (fresh prompts: each sees only its own keys), the keys and values come instead
from the step's own QKV projection (rope_store.py's keep_k), contiguous: the cache's 16-token blocks
are smaller than the kernel's 128-key tiles, so the paged kernel cannot load them with the TMA and
reads them slower. The kernel's compiled form
depends on the shapes' kind (dtype, head dims, paging), not on the lengths, so a server's new prompt
lengths cost no compilation.

`choose` decides when the engine starts: it times both kernels on one prefill step of the model's
shape, 2,048-token prompts filling the step's rows, and keeps FlashAttention only where its output,
paged and from contiguous keys, matches the Triton kernel's and it is faster (gemm.accepted).
"""

import logging
import time

import torch

from engine.cuda import gemm
from engine.cuda.prefill_attention import prefill_attention

log = logging.getLogger("engine.cuda")


def flash_missing() -> str | None:
    """Why FlashAttention-4 cannot run here, or None when it can."""
    if torch.cuda.get_device_capability() != (9, 0):
        cc = "".join(map(str, torch.cuda.get_device_capability()))
        return f"the engine takes flash-attn-4's Hopper kernel only; this GPU is sm_{cc}"
    try:
        import flash_attn.cute.interface  # noqa: F401
    except ImportError as e:
        return f"flash-attn-4 is not installed ({e}); pip install 'harness[cuda-kernels]'"
    return None


def flash_prefill(
    q: torch.Tensor,  # (R, H, D): the chunks' rows only, packed
    k_cache: torch.Tensor,  # (num_blocks, block_size, KVH, D) of one layer
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,  # (S, W) int32
    cu_seqlens: torch.Tensor,  # (S + 1,) int32: chunk i is rows cu_seqlens[i]..cu_seqlens[i + 1] - 1 of q
    kv_len: torch.Tensor,  # (S,) int32
    max_q_len: int,
    scale: float,
    out: torch.Tensor,  # (R, H, D), written
) -> None:
    from flash_attn.cute.interface import _flash_attn_fwd

    _flash_attn_fwd(
        q,
        k_cache,
        v_cache,
        cu_seqlens_q=cu_seqlens,
        seqused_k=kv_len,
        max_seqlen_q=max_q_len,
        page_table=block_tables,
        softmax_scale=scale,
        causal=True,
        out=out,
    )


def flash_prefill_fresh(
    q: torch.Tensor,  # (R, H, D): the chunks' rows only, packed, every chunk from position 0
    k: torch.Tensor,  # (R, KVH, D): the same rows' keys, rotated (strided views are fine)
    v: torch.Tensor,
    cu_seqlens: torch.Tensor,  # (S + 1,) int32
    max_q_len: int,
    scale: float,
    out: torch.Tensor,  # (R, H, D), written
) -> None:
    from flash_attn.cute.interface import _flash_attn_fwd

    _flash_attn_fwd(
        q,
        k,
        v,
        cu_seqlens_q=cu_seqlens,
        cu_seqlens_k=cu_seqlens,
        max_seqlen_q=max_q_len,
        max_seqlen_k=max_q_len,
        softmax_scale=scale,
        causal=True,
        out=out,
    )


def choose(k_cache: torch.Tensor, v_cache: torch.Tensor, heads: int, scale: float, rows: int) -> tuple[bool, str]:
    """k_cache, v_cache: one layer's (its contents are overwritten: call before any request); rows:
    the most a step has. Returns (FlashAttention chosen, what was seen, in words)."""
    missing = flash_missing()
    if missing:
        return False, f"Triton ({missing})"
    t0 = time.perf_counter()
    _, bs, _, d = k_cache.shape
    prompt = min(2048, rows)
    n = max(1, min(rows, 8192) // prompt)
    blocks = -(-prompt // bs)
    if n * blocks > k_cache.shape[0]:
        return False, "Triton (the KV cache is too small to time the two)"
    dev = k_cache.device
    k_cache[: n * blocks].normal_()
    v_cache[: n * blocks].normal_()
    q = torch.randn(n * prompt, heads, d, device=dev, dtype=k_cache.dtype)
    tables = torch.randperm(n * blocks, device=dev, dtype=torch.int32).view(n, blocks)
    lens = torch.full((n,), prompt, dtype=torch.int32, device=dev)
    starts = torch.arange(0, n * prompt, prompt, dtype=torch.int32, device=dev)
    cu = torch.arange(0, (n + 1) * prompt, prompt, dtype=torch.int32, device=dev)
    # the same keys and values as the paged cache holds them, contiguous: the fresh prompts' form
    k, v = (c[tables.long()].flatten(1, 2)[:, :prompt].reshape(n * prompt, *c.shape[2:]) for c in (k_cache, v_cache))
    triton_out, flash_out, fresh_out = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)

    def triton_step():
        prefill_attention(q, k_cache, v_cache, tables, starts, lens, lens, prompt, scale, triton_out)

    def flash_step():
        flash_prefill(q, k_cache, v_cache, tables, cu, lens, prompt, scale, flash_out)

    def fresh_step():
        flash_prefill_fresh(q, k, v, cu, prompt, scale, fresh_out)

    try:
        triton_s = gemm.cuda_time(triton_step, 5)
        flash_s, fresh_s = gemm.cuda_time(flash_step, 5), gemm.cuda_time(fresh_step, 5)
    except Exception as e:  # a kernel flash-attn-4 cannot build here: the Triton kernel serves
        log.info("prefill attention: flash-attn-4 failed: %s", e)
        return False, f"Triton (flash-attn-4 failed: {type(e).__name__}: {e})"
    chosen = gemm.accepted(flash_out, triton_out, flash_s, triton_s) and gemm.accepted(
        fresh_out, triton_out, fresh_s, triton_s
    )
    what = (
        f"{'FlashAttention-4' if chosen else 'Triton'} (FlashAttention-4 {triton_s / flash_s:.2f}x Triton paged, "
        f"{triton_s / fresh_s:.2f}x from contiguous keys, on {n} x {prompt} tokens, relative difference "
        f"{gemm.relative_error(flash_out, triton_out):.1e} / {gemm.relative_error(fresh_out, triton_out):.1e})"
    )
    log.info("prefill attention chosen in %.1f s: %s", time.perf_counter() - t0, what)
    return chosen, what
