"""Rank a repository's files and definitions for a text (an issue, a query), without a model.

A file's score adds up what the text says about it: BM25 over its whole text, over its skeleton and
over its best definition, each scaled to the best file's; the paths, modules, stack frames and
definitions the text names (tools.code.mentions); and a little of its PageRank in the file graph.
Test files are scaled down, since a fix lives in the code they test. A definition's score is its own
BM25, its file's score, and whether the text names it. `Weights` holds every factor, so a benchmark
can take each out and measure what it was worth.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from tools.code import mentions
from tools.code.dense import embedder
from tools.code.index import CodeIndex
from tools.code.parse import Symbol
from tools.code.words import IDENTIFIER, split


@dataclass(frozen=True)
class Weights:
    content: float = 1.0
    skeleton: float = 0.5
    functions: float = 0.7
    paths: float = 1.5  # a path or module the text names
    frames: float = 1.0  # a stack frame's file, the deepest most
    names: float = 1.0  # a definition the text names, shared among the files defining that name
    prior: float = 0.0  # PageRank in the file graph (0: the graph is not even built)
    dense: float = 0.0  # the dense half: cosine of embeddings (tools.code.dense; 0: off, no model loaded)
    embedder: str = "wordllama"
    tests: float = 0.3  # a test file's score is multiplied by this
    words_only: float = 0.3  # and a file of a language without definitions (configuration, scripts) by this
    code_words: float = 2.0  # a word from a code-like identifier counts this many times a prose word
    # definitions
    function_file: float = 1.0  # the file's score, scaled to the best file's
    function_named: float = 1.0  # the text names the definition
    function_qualified: float = 1.0  # the text names it with its class (Model.save)


DEFAULT = Weights()


@dataclass(frozen=True)
class Ranking:
    files: list[tuple[str, float]]
    functions: list[tuple[Symbol, float]]


def query(index: CodeIndex, text: str, code_words: float = DEFAULT.code_words) -> dict[int, float]:
    """The text's words as word id -> weight: a word repeated counts a little more, one from an identifier
    nobody writes in prose counts `code_words` times as much."""
    weights: dict[int, float] = {}
    for identifier, n in Counter(IDENTIFIER.findall(text)).items():
        w = (1.0 + math.log(n)) * (code_words if mentions.code_like(identifier) else 1.0)
        for word in split(identifier):
            i = index.vocab.get(word)
            if i is not None:
                weights[i] = weights.get(i, 0.0) + w
    return weights


@dataclass(frozen=True)
class Evidence:
    """What a text says about each file and each definition, before any weight: BM25 scores scaled to the
    best one's, mentions, the graph's prior."""

    content: np.ndarray  # per file
    skeleton: np.ndarray
    best_part: np.ndarray  # the file's best definition's BM25
    paths: np.ndarray  # paths and modules the text names
    frames: np.ndarray
    names: np.ndarray  # definitions the text names, shared among their files
    prior: np.ndarray
    dense: np.ndarray  # cosine of the file's skeleton and the text, by the embedder (0 when the dense half is off)
    tests: np.ndarray  # bool: a test file
    words_only: np.ndarray  # bool: a file without definitions' grammar (configuration, scripts)
    parts: np.ndarray  # per definition: its BM25
    named: np.ndarray  # how surely the text names it
    qualified: np.ndarray  # 1 where the text names it with its class or module


def evidence(index: CodeIndex, text: str, weights: Weights = DEFAULT) -> Evidence:
    """The evidence `weights` can weigh: the graph's prior only when it counts, the dense half only when it is on."""
    n, m = len(index.entries), len(index.symbols)
    words = query(index, text, weights.code_words)
    parts = index.functions.scores(words) if m else np.zeros(0, np.float32)
    best_part = np.zeros(n, np.float32)
    if m:
        np.maximum.at(best_part, index.symbol_file, parts)
    found = mentions.find(index, text)
    named, qualified = np.zeros(m), np.zeros(m)
    for name, sure in found.names.items():
        for i in index.definitions.get(name, ()):
            named[i] = max(named[i], sure)
    for owner, name in found.qualified:
        for i in index.definitions.get(name, ()):
            sym = index.symbols[i]
            if sym.parent.rsplit(".", 1)[-1] == owner or sym.path.rsplit("/", 1)[-1].split(".")[0] == owner:
                qualified[i] = 1.0
    return Evidence(
        content=_scaled(index.content.scores(words)),
        skeleton=_scaled(index.skeleton.scores(words)),
        best_part=_scaled(best_part),
        paths=_vector(n, found.files),
        frames=_vector(n, found.frames),
        names=_vector(n, _named_files(index, found.names)),
        prior=_scaled(np.log1p(index.rank * n)) if n and weights.prior > 0 else np.zeros(n),
        dense=_dense(index, text, weights.embedder) if n and weights.dense > 0 else np.zeros(n),
        tests=np.fromiter((e.test for e in index.entries), bool, n),
        words_only=np.fromiter((e.lang is None for e in index.entries), bool, n),
        parts=_scaled(parts),
        named=named,
        qualified=qualified,
    )


def file_scores(ev: Evidence, w: Weights = DEFAULT) -> np.ndarray:
    score = (
        w.content * ev.content
        + w.skeleton * ev.skeleton
        + w.functions * ev.best_part
        + w.paths * ev.paths
        + w.frames * ev.frames
        + w.names * ev.names
        + w.prior * ev.prior
        + w.dense * ev.dense
    )
    return score * np.where(ev.tests, w.tests, 1.0) * np.where(ev.words_only, w.words_only, 1.0)


def function_scores(ev: Evidence, symbol_file: np.ndarray, files: np.ndarray, w: Weights = DEFAULT) -> np.ndarray:
    return (
        ev.parts
        + w.function_file * _scaled(files)[symbol_file]
        + w.function_named * ev.named
        + w.function_qualified * ev.qualified
    )


def localize(index: CodeIndex, text: str, k: int = 10, weights: Weights = DEFAULT) -> Ranking:
    return ranking(index, evidence(index, text, weights), k, weights)


def ranking(index: CodeIndex, ev: Evidence, k: int, weights: Weights = DEFAULT) -> Ranking:
    """The k best files and definitions by the evidence weighed with `weights` (one evidence, several weighings)."""
    files = file_scores(ev, weights)
    funcs = function_scores(ev, index.symbol_file, files, weights)
    top_files = np.argsort(-files, kind="stable")[:k]
    top_funcs = np.argsort(-funcs, kind="stable")[:k]
    return Ranking(
        [(index.entries[i].path, float(files[i])) for i in top_files if files[i] > 0],
        [(index.symbols[i], float(funcs[i])) for i in top_funcs if funcs[i] > 0],
    )


def _dense(index: CodeIndex, text: str, name: str) -> np.ndarray:
    files = index.embeddings(embedder(name))
    return np.maximum(files @ embedder(name).embed([text])[0], 0.0)


def _named_files(index: CodeIndex, names: dict[str, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for name, sure in names.items():
        files = {int(index.symbol_file[i]) for i in index.definitions.get(name, ())}
        for f in files:
            out[f] = out.get(f, 0.0) + sure / len(files)
    return out


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if len(x) else 0.0
    return x / top if top > 0 else x


def _vector(n: int, values: dict[int, float]) -> np.ndarray:
    out = np.zeros(n)
    for i, v in values.items():
        out[i] += v
    return out
