"""Rebuilt prompts sent through the engine's own prefix cache, beside the ideal one (memory/prefix.py).

Every request a re-render rebuilt (agent and summariser, in their order in the run) is rendered with the
default model's chat template and tokenizer and prefilled by the local engine (one token generated, then
discarded); the engine reports how many prompt tokens its radix cache served. The engine runs the default
model's tokenizer, block size and radix cache, but random weights of a one-layer shape with a 256k-token
position table: which prompt tokens a prefix cache serves depends only on the token ids, the block size and
the cache's capacity, never on the weights, and the real model's own window could not hold long prompts.
Each run and policy gets a fresh engine: a cold cache, as a fresh server would have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.models.convert import to_openai
from agent.recorded.rerender import Rerendered
from tools.base import openai_schema

CACHE_TOKENS = 400_000  # KV blocks for this many tokens: every policy's working set fits, as on a server with room


@dataclass(frozen=True)
class CacheEngine:
    new: Callable[[], Any]  # a fresh engine.Engine, its cache cold
    tokenizer: Any  # engine.tokenizer.Tokenizer


def cache_engine(weights: str = "dummy") -> CacheEngine:
    """`dummy`: the one-layer shape above; `default`: the default model itself (its own window and cache size)."""
    from engine.config import EngineConfig, ModelConfig
    from engine.engine import Engine
    from engine.tokenizer import Tokenizer
    from engine.weights import default_model_path, dummy_checkpoint, load_checkpoint

    real = load_checkpoint(default_model_path())
    tokenizer = Tokenizer.from_checkpoint(real)
    if weights == "default":
        return CacheEngine(lambda: Engine(real, EngineConfig(max_num_batched_tokens=2048)), tokenizer)
    shape = ModelConfig(
        vocab_size=real.config.vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_layers=1,
        num_heads=1,
        num_kv_heads=1,
        head_dim=64,
        max_position_embeddings=262_144,
        eos_token_ids=real.config.eos_token_ids,
    )
    kv = CACHE_TOKENS * shape.kv_bytes_per_token()
    ckpt = dummy_checkpoint(shape)
    return CacheEngine(lambda: Engine(ckpt, EngineConfig(kv_cache_bytes=kv, max_num_batched_tokens=4096)), tokenizer)


@dataclass(frozen=True)
class EngineCached:
    """Prompt tokens in the engine's tokenizer, and those its prefix cache served."""

    agent_prompt: int
    agent_cached: int
    summariser_prompt: int
    summariser_cached: int

    @property
    def share(self) -> float | None:
        """Of the agent's requests."""
        return round(self.agent_cached / self.agent_prompt, 4) if self.agent_prompt else None

    @property
    def share_all(self) -> float | None:
        """Of every request, the summariser's included."""
        prompt = self.agent_prompt + self.summariser_prompt
        return round((self.agent_cached + self.summariser_cached) / prompt, 4) if prompt else None


def through_engine(r: Rerendered, engine: CacheEngine) -> EngineCached:
    """`r` must have kept its requests (rerender(..., keep_prompts=True))."""
    from engine.sampler import SamplingParams

    once = SamplingParams(temperature=0, max_tokens=1)
    sent = {"agent": [0, 0], "summariser": [0, 0]}  # prompt tokens, cached tokens
    live = engine.new()
    try:
        for req in r.requests:
            tools = [openai_schema(t) for t in req.tools] or None
            ids = engine.tokenizer.encode_chat(to_openai(req.messages), tools)
            usage = live.generate([ids], once)[0].usage
            sent[req.kind][0] += usage.prompt_tokens
            sent[req.kind][1] += usage.cached_tokens
    finally:
        live.shutdown()
    return EngineCached(*sent["agent"], *sent["summariser"])
