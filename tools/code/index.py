"""The index of a repository at one moment: its files' entries, three BM25 indexes and the file graph.

    index = build(files)                      # files: (path, bytes) pairs
    index = build(changed, previous=index)    # the same, reusing every entry whose bytes did not change

The three lexical indexes: files by their whole text (`content`), files by their skeleton (path,
definitions' names, headers, docstrings: what Agentless ranks by), and definitions by their own lines
(`functions`). Word ids come from one vocabulary that only grows, so entries made for one index serve
the next.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from tools.code import graph as file_graph
from tools.code.dense import Embedder, skeleton_text
from tools.code.entry import Entry, read
from tools.code.languages import is_binary, is_minified, wanted
from tools.code.lexical import Lexical
from tools.code.modules import module_names
from tools.code.parse import Symbol
from tools.code.words import Vocabulary

VERSION = 2  # of the index's layout and words: a cached index of another version is rebuilt
SKELETON_DEFINITIONS = 200  # of a file's definitions, those its embedding reads


@dataclass
class Skipped:
    """Files the index left out, by reason, so a tool can say what it cannot see."""

    binary: list[str] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)
    minified: list[str] = field(default_factory=list)


class CodeIndex:
    def __init__(self, entries: list[Entry], vocab: Vocabulary, skipped: Skipped | None = None):
        self.entries = sorted(entries, key=lambda e: e.path)
        self.vocab = vocab
        self.skipped = skipped or Skipped()
        self.by_path = {e.path: i for i, e in enumerate(self.entries)}
        self.symbols: list[Symbol] = [s for e in self.entries for s in e.symbols]
        self.symbol_file = np.array([i for i, e in enumerate(self.entries) for _ in e.symbols], np.int32)
        self.definitions: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(self.symbols):
            self.definitions[s.name].append(i)
        size = len(vocab)
        self.content = Lexical([e.content for e in self.entries], size)
        self.skeleton = Lexical([e.skeleton for e in self.entries], size)
        self.functions = Lexical([p for e in self.entries for p in e.parts], size)
        self.suffixes: dict[str, list[int]] = defaultdict(list)  # a path's every tail from a folder on -> files
        for i, e in enumerate(self.entries):
            parts = e.path.split("/")
            for k in range(len(parts)):
                self.suffixes["/".join(parts[k:])].append(i)
        self.modules = module_names(self.by_path)
        self._graph: nx.DiGraph | None = None
        self._rank: np.ndarray | None = None
        self._embedded: dict[str, np.ndarray] = {}

    @property
    def graph(self) -> nx.DiGraph:
        """The file graph, made when first asked for (a repository map, a ranking that weighs PageRank)."""
        if self._graph is None:
            self._graph = file_graph.build(self.entries, self.modules)
        return self._graph

    @property
    def rank(self) -> np.ndarray:
        """Each file's PageRank in the file graph."""
        if self._rank is None:
            self._rank = file_graph.pagerank(self.graph)
        return self._rank

    def embeddings(self, embedder: Embedder) -> np.ndarray:
        """Each file's skeleton embedded (tools.code.dense), made when first asked for, per embedder."""
        if embedder.name not in self._embedded:
            texts = [
                skeleton_text(e.path, [f"{s.header} {s.doc}" for s in e.symbols[:SKELETON_DEFINITIONS]])
                for e in self.entries
            ]
            self._embedded[embedder.name] = embedder.embed(texts) if texts else np.zeros((0, 1), np.float32)
        return self._embedded[embedder.name]

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.entries]

    def entry(self, path: str) -> Entry | None:
        i = self.by_path.get(path)
        return None if i is None else self.entries[i]


def build(
    files: Iterable[tuple[str, bytes | None]], previous: CodeIndex | None = None, keep: bool = False
) -> CodeIndex:
    """An index of `files` ((path, bytes) pairs; bytes None: the file is gone). With `previous`, its entries
    are reused where the bytes are the same; with `keep`, its files not named in `files` stay as they were
    (an update of the files that changed), else only `files` make the index."""
    vocab = previous.vocab if previous is not None else Vocabulary()
    old = {e.path: e for e in previous.entries} if previous is not None else {}
    skipped = Skipped()
    entries: dict[str, Entry] = dict(old) if keep else {}
    for path, data in files:
        entries.pop(path, None)
        if data is None:
            continue
        if not wanted(path, len(data)):
            if len(data) > 0 and wanted(path, 0):
                skipped.too_large.append(path)
            continue
        if is_binary(data):
            skipped.binary.append(path)
            continue
        if is_minified(data):
            skipped.minified.append(path)
            continue
        reused = old.get(path)
        if reused is not None and reused.size == len(data) and reused.sha == _sha(data):
            entries[path] = reused
            continue
        entries[path] = read(path, data, vocab)
    if keep and previous is not None:
        skipped = _merged(previous.skipped, skipped, entries)
    return CodeIndex(list(entries.values()), vocab, skipped)


def _sha(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _merged(before: Skipped, now: Skipped, entries: dict[str, Entry]) -> Skipped:
    return Skipped(
        binary=sorted({*before.binary, *now.binary} - entries.keys()),
        too_large=sorted({*before.too_large, *now.too_large} - entries.keys()),
        minified=sorted({*before.minified, *now.minified} - entries.keys()),
    )
