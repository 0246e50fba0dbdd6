"""The dense half of the ranking: files and queries as embeddings, compared by cosine. Pluggable and off by
default (`Weights.dense` is 0): no model may be downloaded here, so nothing depends on one.

An embedder is anything with a `name` and `embed(texts) -> array (n, d)` of unit rows. The one named here,
`wordllama`, is the static token-embedding model that ships inside the `wordllama` wheel (256 dimensions,
16 MB of weights, loaded from the package folder itself, never from the hub). A file is embedded by its
skeleton (path, definitions' headers and docstrings), the words a person would search it by.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np

from core.errors import HarnessError


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class _WordLlama:
    name = "wordllama"

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError:
            raise HarnessError(
                "The dense ranking `wordllama` needs the wordllama package: pip install wordllama."
            ) from None
        # Its weights and tokenizer ship in the package; looking there first keeps it off the network.
        self.model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.asarray(self.model.embed(list(texts), norm=True), np.float32)
        return vectors.reshape(len(texts), -1)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"wordllama": _WordLlama}


@cache
def embedder(name: str) -> Embedder:
    if name not in EMBEDDERS:
        raise HarnessError(f"Unknown dense ranking {name!r}; known: {', '.join(EMBEDDERS)}.")
    return EMBEDDERS[name]()


def skeleton_text(path: str, headers: Sequence[str]) -> str:
    return " ".join([path.replace("/", " ").replace("_", " "), *headers])
