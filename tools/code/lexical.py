"""One BM25 index over documents given as word ids and counts, asked with weighted words.

The score of every (word, document) pair is computed once, by Lucene's BM25 (the variant bm25s and
Lucene default to), and kept as a sparse column per word; a query is the weighted sum of its words'
columns, so an identifier the issue names can count for more than a word of its prose. The columns are
built from the counts the index already has, in a few numpy passes; bm25s (which scores the plain-BM25
baseline in benchmarks/bench_localize.py) would count every document's words again in Python, which on
a repository of django's size is most of the time an index takes to build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Doc = tuple[np.ndarray, np.ndarray]  # word ids (int32) and their counts (uint8)
K1 = 1.2
B = 0.75


class Lexical:
    def __init__(self, docs: Sequence[Doc], vocab_size: int, k1: float = K1, b: float = B):
        self.size = len(docs)
        self.vocab_size = vocab_size
        lengths = np.fromiter((len(ids) for ids, _ in docs), np.int64, len(docs))
        words = np.concatenate([ids for ids, _ in docs]) if docs else np.zeros(0, np.int32)
        tf = np.concatenate([c for _, c in docs]).astype(np.float32) if docs else np.zeros(0, np.float32)
        doc_of = np.repeat(np.arange(len(docs), dtype=np.int32), lengths)
        doc_len = np.bincount(doc_of, weights=tf, minlength=len(docs)).astype(np.float32)
        avg = float(doc_len.mean()) if len(docs) and doc_len.any() else 1.0
        df = np.bincount(words, minlength=vocab_size).astype(np.float32)
        idf = np.log1p((len(docs) - df + 0.5) / (df + 0.5))
        score = idf[words] * tf / (tf + k1 * (1 - b + b * doc_len[doc_of] / avg))
        order = np.argsort(words, kind="stable")
        self.data = score[order].astype(np.float32)
        self.indices = doc_of[order]
        self.indptr = np.concatenate(([0], np.cumsum(np.bincount(words, minlength=vocab_size))))

    def scores(self, weights: Mapping[int, float]) -> np.ndarray:
        """Every document's score for words weighted as given (word ids past this index's vocabulary score 0)."""
        out = np.zeros(self.size, np.float32)
        for word, weight in weights.items():
            if word < self.vocab_size:
                start, end = self.indptr[word], self.indptr[word + 1]
                out[self.indices[start:end]] += weight * self.data[start:end]
        return out

    def document_frequency(self, word: int) -> int:
        return int(self.indptr[word + 1] - self.indptr[word]) if word < self.vocab_size else 0
