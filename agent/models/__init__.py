"""Model clients, chosen by a model string.

    scripted:FILE                                   replies from a JSON/YAML file
    openai:MODEL                                    OpenAI (OPENAI_API_KEY)
    anthropic:MODEL                                 Anthropic (ANTHROPIC_API_KEY)
    openai-compatible:http://HOST:PORT/v1#MODEL     any OpenAI-compatible server, e.g. `harness serve`
    anthropic-compatible:http://HOST:PORT#MODEL     any Anthropic-compatible server
    local | local:PATH                              the in-process engine (embedded model, or a GGUF/folder)
"""

from __future__ import annotations

import os

from core.errors import HarnessError
from agent.models.base import ModelClient

KNOWN = (
    "scripted:FILE, openai:MODEL, anthropic:MODEL, openai-compatible:http://HOST:PORT/v1#MODEL, "
    "anthropic-compatible:http://HOST:PORT#MODEL, local, local:PATH, local-int4, local-int4:PATH"
)


def _key(env: str, spec: str, required: bool = True) -> str:
    key = os.environ.get(env)
    if key:
        return key
    if required:
        raise HarnessError(f"The model {spec!r} needs an API key: set {env} in the environment.")
    return "not-needed"  # local servers take any key; the SDK insists on one


def _url_and_model(spec: str, rest: str, example: str) -> tuple[str, str]:
    url, _, model = rest.partition("#")
    if not url.startswith(("http://", "https://")) or not model:
        raise HarnessError(f"Model string {spec!r} must look like {example}.")
    return url, model


def load_model(spec: str) -> ModelClient:
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        from agent.models.scripted import ScriptedModel

        if not rest:
            raise HarnessError("`scripted:` needs a file of replies, e.g. --model scripted:examples/demo.yaml.")
        return ScriptedModel.from_file(rest)
    if kind == "openai" and rest:
        from agent.models.openai import OpenAIModel

        return OpenAIModel(rest, api_key=_key("OPENAI_API_KEY", spec))
    if kind == "anthropic" and rest:
        from agent.models.anthropic import AnthropicModel

        return AnthropicModel(rest, api_key=_key("ANTHROPIC_API_KEY", spec))
    if kind == "openai-compatible":
        from agent.models.openai import OpenAIModel

        url, model = _url_and_model(spec, rest, "openai-compatible:http://127.0.0.1:8000/v1#smollm2")
        return OpenAIModel(model, api_key=_key("OPENAI_API_KEY", spec, required=False), base_url=url)
    if kind == "anthropic-compatible":
        from agent.models.anthropic import AnthropicModel

        url, model = _url_and_model(spec, rest, "anthropic-compatible:http://127.0.0.1:8000#smollm2")
        return AnthropicModel(model, api_key=_key("ANTHROPIC_API_KEY", spec, required=False), base_url=url)
    if kind in ("local", "local-int4"):
        from agent.models.local import LocalModel

        return LocalModel(path=rest or None, weights="int4" if kind == "local-int4" else "float32")
    raise HarnessError(f"Unknown model {spec!r}. Model strings look like: {KNOWN}.")
