"""A mixture-of-experts MLP in plain torch, the CPU path's: route, then each chosen expert on its tokens.

Routing is Qwen3-MoE's: a softmax over the router's logits in float32, the top k, renormalised to
sum to one with norm_topk_prob. Each expert that any token chose runs once on the rows that chose it,
and its output, scaled by their routing weights, is added into theirs: experts in ascending
order, as transformers sums them, so the float32 results agree to the last bits. The loop reads
which experts were chosen on the host; the CUDA path routes and runs the experts on the device
instead (engine/cuda/moe.py), and is checked against this.
"""

from collections.abc import Callable

import torch


def route(x: torch.Tensor, router: torch.Tensor, top_k: int, renormalise: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """x (T, hidden), router (experts, hidden) -> each row's expert weights and ids, both (T, top_k)."""
    probs = torch.softmax(x.float() @ router.float().t(), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids


def mixture(
    x: torch.Tensor,  # (T, hidden), already normalised
    weights: torch.Tensor,  # (T, top_k) float32
    ids: torch.Tensor,  # (T, top_k)
    expert: Callable[[int, torch.Tensor], torch.Tensor],  # (expert id, its rows of x) -> (rows, hidden)
) -> torch.Tensor:
    out = torch.zeros_like(x)
    for e in ids.unique().tolist():
        rows, slot = (ids == e).nonzero(as_tuple=True)
        y = expert(e, x.index_select(0, rows))
        out.index_add_(0, rows, (y.float() * weights[rows, slot, None]).to(out.dtype))
    return out
