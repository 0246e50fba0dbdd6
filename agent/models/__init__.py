"""Model clients, chosen by a model string such as `scripted:FILE`."""

from __future__ import annotations

from agent.errors import HarnessError
from agent.models.base import ModelClient

KNOWN = "scripted:FILE"


def load_model(spec: str) -> ModelClient:
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        from agent.models.scripted import ScriptedModel

        if not rest:
            raise HarnessError("`scripted:` needs a file of replies, e.g. --model scripted:examples/demo.yaml.")
        return ScriptedModel.from_file(rest)
    raise HarnessError(f"Unknown model {spec!r}. Model strings look like: {KNOWN}.")
