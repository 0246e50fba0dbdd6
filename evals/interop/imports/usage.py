"""A provider's recorded usage as ours: prompt (cached included), cached, cache writes, completion, reasoning.

Other harnesses keep the provider's raw `usage` object: OpenAI chat completions (`prompt_tokens`,
`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`), the Responses API
(`input_tokens`, `input_tokens_details`, `output_tokens_details`) or LiteLLM's Anthropic fields
(`cache_creation_input_tokens`); Claude Code keeps Anthropic's own. OpenRouter adds the call's `cost`.
"""

from __future__ import annotations

from typing import Any

from core.types import Usage
from evals.interop.imports.text import fields


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def openai_usage(raw: Any) -> Usage | None:
    """None when the object holds no token count at all (the source recorded nothing)."""
    u = fields(raw)
    prompt, completion = (
        u.get("prompt_tokens", u.get("input_tokens")),
        u.get("completion_tokens", u.get("output_tokens")),
    )
    if prompt is None and completion is None:
        return None
    prompt_details = fields(u.get("prompt_tokens_details")) or fields(u.get("input_tokens_details"))
    completion_details = fields(u.get("completion_tokens_details")) or fields(u.get("output_tokens_details"))
    return Usage(
        prompt_tokens=_int(prompt),
        completion_tokens=_int(completion),
        cached_tokens=_int(prompt_details.get("cached_tokens")),
        cache_write_tokens=_int(u.get("cache_creation_input_tokens") or prompt_details.get("cache_write_tokens")),
        reasoning_tokens=_int(completion_details.get("reasoning_tokens")),
    )


def openrouter_cost(raw: Any) -> float | None:
    """The call's cost as OpenRouter reported it; with a user's own key (`is_byok`) its `cost` is 0 and the
    provider's charge is the upstream cost."""
    u = fields(raw)
    cost = u.get("cost")
    if u.get("is_byok"):
        cost = fields(u.get("cost_details")).get("upstream_inference_cost", cost)
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def anthropic_usage(raw: Any) -> Usage | None:
    """Anthropic's Messages API usage: `input_tokens` counts only what was neither read from nor written to the
    cache, so the prompt is the three summed; None when it holds no token count."""
    u = fields(raw)
    if u.get("input_tokens") is None and u.get("output_tokens") is None:
        return None
    read, written = _int(u.get("cache_read_input_tokens")), _int(u.get("cache_creation_input_tokens"))
    return Usage(
        prompt_tokens=_int(u.get("input_tokens")) + read + written,
        completion_tokens=_int(u.get("output_tokens")),
        cached_tokens=read,
        cache_write_tokens=written,
    )
