"""One file as the index keeps it: its definitions, imports, the names it uses, and its words.

Reading a file is the costly part of building an index (parsing and counting words), so an entry
depends only on the file's path, its bytes and the repository's vocabulary: an unchanged file's entry
serves the next index as it is, for the same repository at another commit or after the agent edited
other files.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from tools.code.languages import is_test, language
from tools.code.lexical import Doc
from tools.code.parse import Parsed, Symbol, owners, parse
from tools.code.words import IDENTIFIER, MAX_COUNT, Vocabulary, path_parts

# How much a word counts where it names something: a file's path and definitions, a definition's name.
PATH_WEIGHT = 3
NAME_WEIGHT = 2


@dataclass(slots=True)
class Entry:
    path: str
    sha: str  # sha1 of the bytes
    size: int
    lines: int
    lang: str | None
    replaced: bool  # not UTF-8: read with replacement characters
    symbols: tuple[Symbol, ...]
    imports: tuple[tuple[str, tuple[str, ...]], ...]
    uses: frozenset[str]  # identifiers the file names
    zipped: bytes  # the text, zlib-compressed, for snippets and references
    content: Doc  # every word of the file
    skeleton: Doc  # the words of its path, definitions' names, headers and docstrings
    parts: tuple[Doc, ...]  # per definition: its own lines' words, its name's, its parents' and the path's

    @property
    def text(self) -> str:
        return zlib.decompress(self.zipped).decode("utf-8")

    @property
    def test(self) -> bool:
        return is_test(self.path)


def read(path: str, data: bytes, vocab: Vocabulary) -> Entry:
    try:
        text, replaced = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = data.decode("utf-8", "replace"), True
    lang = language(path)
    parsed = parse(path, data, lang) if lang is not None else Parsed((), ())
    symbols = parsed.symbols
    lines = text.split("\n")
    owner = owners(symbols, len(lines))
    n = len(symbols)
    segments: list[list[str]] = [[] for _ in range(n + 1)]  # one per definition, the last: module level
    for line, who in zip(lines, owner):
        segments[who].append(line)
    # (row, identifier, count): rows 0..n-1 are the definitions, n the module level, n+1 the skeleton.
    rows: list[int] = []
    names: list[str] = []
    counts: list[int] = []
    for row, seg in enumerate(segments):
        found = Counter(IDENTIFIER.findall("\n".join(seg)))
        rows.extend(repeat(row, len(found)))
        names.extend(found)
        counts.extend(found.values())
    body = len(rows)
    uses = frozenset(names)
    path_names = path_parts(path)
    skeleton = n + 1
    for i, sym in enumerate(symbols):
        _add(rows, names, counts, i, [sym.name], NAME_WEIGHT)
        _add(rows, names, counts, i, [*IDENTIFIER.findall(sym.parent), *path_names], 1)
        _add(rows, names, counts, skeleton, [sym.name], NAME_WEIGHT)
        _add(rows, names, counts, skeleton, IDENTIFIER.findall(f"{sym.header} {sym.doc}"), 1)
    _add(rows, names, counts, skeleton, path_names, PATH_WEIGHT)
    docs, content = _count(rows, names, counts, body, n + 2, vocab)
    return Entry(
        path=path,
        sha=hashlib.sha1(data).hexdigest(),
        size=len(data),
        lines=len(lines),
        lang=lang,
        replaced=replaced,
        symbols=symbols,
        imports=parsed.imports,
        uses=uses,
        zipped=zlib.compress(text.encode("utf-8"), 1),
        content=content,
        skeleton=docs[skeleton],
        parts=tuple(docs[:n]),
    )


def _add(rows: list[int], names: list[str], counts: list[int], row: int, found: list[str], weight: int) -> None:
    rows.extend(repeat(row, len(found)))
    names.extend(found)
    counts.extend(repeat(weight, len(found)))


def _count(
    rows: list[int], names: list[str], counts: list[int], body: int, size: int, vocab: Vocabulary
) -> tuple[list[Doc], Doc]:
    """Each row's words and counts, and the words of the first `body` entries (the file's text) together:
    every identifier's words looked up once, the counting done by numpy."""
    if not names:
        empty: Doc = (np.zeros(0, np.int32), np.zeros(0, np.uint8))
        return [empty] * size, empty
    local: dict[str, int] = {}
    which = np.fromiter((local.setdefault(x, len(local)) for x in names), np.int64, len(names))
    split = [vocab.of(x) for x in local]
    lengths = np.fromiter(map(len, split), np.int64, len(split))
    flat = np.fromiter(chain.from_iterable(split), np.int64, int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    per = lengths[which]  # words of each (row, identifier)
    offsets = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    word = flat[np.repeat(starts[which], per) + offsets]
    row = np.repeat(np.asarray(rows, np.int64), per)
    count = np.repeat(np.asarray(counts, np.int64), per)
    docs = _grouped(row, word, count, size)
    in_body = np.repeat(np.arange(len(names)) < body, per)
    content = _grouped(np.zeros(int(in_body.sum()), np.int64), word[in_body], count[in_body], 1)[0]
    return docs, content


def _grouped(row: np.ndarray, word: np.ndarray, count: np.ndarray, size: int) -> list[Doc]:
    keys, inverse = np.unique(row << 32 | word, return_inverse=True)
    totals = np.minimum(np.bincount(inverse, weights=count), MAX_COUNT).astype(np.uint8)
    words = (keys & 0xFFFFFFFF).astype(np.int32)
    bounds = np.searchsorted(keys >> 32, np.arange(size + 1))
    return [(words[a:b], totals[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
