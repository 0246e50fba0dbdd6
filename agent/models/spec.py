"""The one parser of model strings. Every part of the harness that reads a model string asks it.

scripted:FILE                                   replies from a JSON/YAML file
openai:MODEL                                    OpenAI (OPENAI_API_KEY)
anthropic:MODEL                                 Anthropic (ANTHROPIC_API_KEY)
openai-compatible:http://HOST:PORT/v1#MODEL     any OpenAI-compatible server, e.g. `harness serve`
anthropic-compatible:http://HOST:PORT#MODEL     any Anthropic-compatible server
local | local:PATH                              the in-process engine (embedded model, or a GGUF/folder)
local-int4 | local-int4:PATH                    the same, with 4-bit weights
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import HarnessError

KNOWN = (
    "scripted:FILE, openai:MODEL, anthropic:MODEL, openai-compatible:http://HOST:PORT/v1#MODEL, "
    "anthropic-compatible:http://HOST:PORT#MODEL, local, local:PATH, local-int4, local-int4:PATH"
)
_EXAMPLES = {
    "openai-compatible": "openai-compatible:http://127.0.0.1:8000/v1#smollm2",
    "anthropic-compatible": "anthropic-compatible:http://127.0.0.1:8000#smollm2",
}


@dataclass(frozen=True)
class ModelString:
    kind: str  # scripted, openai, anthropic, openai-compatible, anthropic-compatible, local, local-int4
    name: str = ""  # the provider's model name
    url: str | None = None  # base URL of a compatible server
    path: str | None = None  # a scripted file, or a local model file or folder

    @property
    def is_local(self) -> bool:
        """The in-process engine: the harness knows its tokenizer and the policy that suits it."""
        return self.kind in ("local", "local-int4")


def model_name(spec: str) -> str:
    """The name a client of `spec` goes by (run.json's `model`, the price table's key), known without making
    the client: the model string itself, with a scripted file's path as the file system writes it."""
    m = parse_model(spec)
    return f"scripted:{Path(m.path or '')}" if m.kind == "scripted" else spec


def is_local(spec: str) -> bool:
    """Whether `spec` names the in-process engine; False for anything else, players and reference agents included."""
    try:
        return parse_model(spec).is_local
    except HarnessError:
        return False


def parse_model(spec: str) -> ModelString:
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        if not rest:
            raise HarnessError("`scripted:` needs a file of replies, e.g. --model scripted:examples/demo_script.yaml.")
        return ModelString(kind, path=rest)
    if kind in ("openai", "anthropic") and rest:
        return ModelString(kind, name=rest)
    if kind in _EXAMPLES:
        url, _, name = rest.partition("#")
        if not url.startswith(("http://", "https://")) or not name:
            raise HarnessError(f"Model string {spec!r} must look like {_EXAMPLES[kind]}.")
        return ModelString(kind, name=name, url=url)
    if kind in ("local", "local-int4"):
        return ModelString(kind, path=rest or None)
    raise HarnessError(f"Unknown model {spec!r}. Model strings look like: {KNOWN}.")
