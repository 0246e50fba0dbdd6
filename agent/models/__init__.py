"""Model clients, chosen by a model string (agent.models.spec says which strings there are)."""

from __future__ import annotations

import os
import uuid
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path

from agent.models.base import ModelClient
from agent.models.spec import ModelString, parse_model
from core.errors import HarnessError


def _key(env: str, spec: str, required: bool = True) -> str:
    key = os.environ.get(env)
    if key:
        return key
    if required:
        raise HarnessError(f"The model {spec!r} needs an API key: set {env} in the environment.")
    return "not-needed"  # local servers take any key; the SDK insists on one


# Sent with every request to a compatible server, one key per client (so per run): a router in front
# of several engine replicas (`harness serve --replicas N --router session`) pins a run to one.
SESSION_HEADER = "X-Harness-Session"
# With it, the run's tool timeout: a reply that starts a tool call brings the run back within that
# many seconds, so `harness serve` keeps the run's prefix cached ahead of LRU meanwhile.
RETURN_HEADER = "X-Harness-Return-Within"


def _session_headers(m: ModelString, return_within_s: float | None) -> dict[str, str]:
    if m.url is None:
        return {}
    headers = {SESSION_HEADER: uuid.uuid4().hex}
    if return_within_s is not None:
        headers[RETURN_HEADER] = f"{return_within_s:g}"
    return headers


def check_model(spec: str) -> None:
    """Everything about a model string that can be known before a run, or a batch of them, creates anything:
    its form, a scripted model's file, the API key a provider needs, a local model's file. The model itself
    is loaded by each run (a local engine's weights are too heavy to load only to check them)."""
    m = parse_model(spec)
    if m.kind == "scripted":
        from agent.models.scripted import ScriptedModel

        ScriptedModel.from_file(m.path or "")
    elif m.kind in ("openai", "anthropic"):
        _key("OPENAI_API_KEY" if m.kind == "openai" else "ANTHROPIC_API_KEY", spec)
    elif m.is_local and m.path is not None and not Path(m.path).exists():
        raise HarnessError(
            f"The local model {spec!r} names {m.path}, which does not exist: give a GGUF file or a model folder."
        )


def load_model(spec: str, return_within_s: float | None = None) -> ModelClient:
    """A client of `spec`; the caller closes it. Inside `shared_engines()` (agent/models/shared.py), the local
    engine is the one the block shares, else the client loads an engine of its own. `return_within_s`: the
    run's tool timeout, which a compatible server's or the local engine's prefix cache is told."""
    m: ModelString = parse_model(spec)
    if m.kind == "scripted":
        from agent.models.scripted import ScriptedModel

        return ScriptedModel.from_file(m.path or "")
    if m.kind in ("openai", "openai-compatible"):
        from agent.models.openai import OpenAIModel

        return OpenAIModel(
            m.name,
            api_key=_key("OPENAI_API_KEY", spec, required=m.url is None),
            base_url=m.url,
            headers=_session_headers(m, return_within_s),
        )
    if m.kind in ("anthropic", "anthropic-compatible"):
        from agent.models.anthropic import AnthropicModel

        return AnthropicModel(
            m.name,
            api_key=_key("ANTHROPIC_API_KEY", spec, required=m.url is None),
            base_url=m.url,
            headers=_session_headers(m, return_within_s),
        )
    from agent.models.local import LocalModel, load_engine
    from agent.models.shared import SHARED

    weights = "int4" if m.kind == "local-int4" else "float32"
    shared = SHARED.get(spec, lambda: load_engine(m.path, weights, spec))  # None outside a batch's block
    return LocalModel(path=m.path, engine=shared, weights=weights, return_within_s=return_within_s)


def client_for(model: str | ModelClient, return_within_s: float | None = None) -> AbstractContextManager[ModelClient]:
    """`model`'s client for the length of a block: one loaded from a model string is closed when the block
    ends, however it ends; a client passed in stays open (whoever made it closes it)."""
    return closing(load_model(model, return_within_s)) if isinstance(model, str) else nullcontext(model)
