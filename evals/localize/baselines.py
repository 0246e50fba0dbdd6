"""The rankings the code index is measured against, over the same files.

- `bm25`: plain BM25 on raw tokens, what the SWE-bench paper's retrieval and SWE-Explore's baseline do:
  bm25s with its own tokenizer (lower-cased words of two or more word characters, English stop words
  dropped, no identifier splitting, no stemming) over each file's whole text, the issue as the query.
- `grep`: what an agent's first greps find: each file scored by how many of the issue's distinct
  searchable terms it contains (code-like identifiers count double, since an agent greps for those
  first), ties broken by how often they occur.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import bm25s
import numpy as np

from tools.code.mentions import code_like
from tools.code.words import STOP

TERM = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


class PlainBM25:
    """`tokens`: each file's tokens, when a batch has them already (a file unchanged since the last commit)."""

    def __init__(self, paths: Sequence[str], texts: Sequence[str], tokens: Sequence[list[str]] | None = None):
        self.paths = list(paths)
        self.bm25 = bm25s.BM25()
        self.tokens = list(tokens) if tokens is not None else words(texts)
        self.bm25.index(self.tokens, show_progress=False)
        self.vocab = self.bm25.vocab_dict

    def rank(self, text: str, k: int) -> list[str]:
        if not self.paths:
            return []
        words = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)[0]
        ids = [self.vocab[w] for w in words if w in self.vocab]
        if not ids:
            return []
        scores = self.bm25.get_scores(ids)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.paths[i] for i in order if scores[i] > 0]


def words(texts: Sequence[str]) -> list[list[str]]:
    """bm25s's own tokens of each text."""
    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False, return_ids=False)


def grep_rank(paths: Sequence[str], texts: Sequence[str], issue: str, k: int) -> list[str]:
    terms = {t for t in TERM.findall(issue) if t.lower() not in STOP}
    weights = {t: 2.0 if code_like(t) else 1.0 for t in terms}
    scored = []
    for path, text in zip(paths, texts):
        found = [(w, text.count(t)) for t, w in weights.items() if t in text]
        if found:
            scored.append((sum(w for w, _ in found), sum(n for _, n in found), path))
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [path for *_, path in scored[:k]]
