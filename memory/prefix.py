"""Ideal prefix reuse, independent of any provider.

For every request, the longest token prefix it shares with any earlier request
of the run: what a perfect prefix cache (no eviction, no block rounding) could
serve. A radix tree over token ids keeps this near-linear in the new tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class _Node:
    label: list[int] = field(default_factory=list)  # the edge from the parent into this node
    children: dict[int, _Node] = field(default_factory=dict)


def _common(label: list[int], k: int, ids: Sequence[int], pos: int) -> int:
    """How many of label[k:] match ids[pos:]."""
    n = min(len(label) - k, len(ids) - pos)
    if label[k : k + n] == ids[pos : pos + n]:  # the usual case, compared at C speed
        return n
    i = 0
    while i < n and label[k + i] == ids[pos + i]:
        i += 1
    return i


Cursor = tuple[_Node, int]  # a position in the tree: a node and how much of its edge label is matched


class RadixTree:
    def __init__(self) -> None:
        self.root = _Node()

    def walk(self, ids: Sequence[int], at: Cursor | None = None) -> tuple[int, _Node, int]:
        """Follow `ids` from `at` (default: the root) as far as the tree has them: (matched, node, offset)."""
        node, k = at or (self.root, 0)
        pos = 0
        while pos < len(ids):
            if k < len(node.label):
                m = _common(node.label, k, ids, pos)
                pos, k = pos + m, k + m
                if k < len(node.label):
                    break
                continue
            child = node.children.get(ids[pos])
            if child is None:
                break
            node, k = child, 0
        return pos, node, k

    def longest_prefix(self, ids: Sequence[int]) -> int:
        return self.walk(ids)[0]

    def insert(self, ids: Sequence[int], at: Cursor | None = None) -> Cursor:
        """Add `ids` (continuing from `at`); return the cursor at its end."""
        pos, node, k = self.walk(ids, at)
        if pos == len(ids):
            return node, k
        if k < len(node.label):  # split the edge where the new sequence leaves it
            rest = _Node(node.label[k:], node.children)
            node.label, node.children = node.label[:k], {rest.label[0]: rest}
        leaf = _Node(list(ids[pos:]))
        node.children[ids[pos]] = leaf
        return leaf, len(leaf.label)


@dataclass
class PrefixReuse:
    """Accumulates, request by request, how many prompt tokens an ideal cache would have served."""

    tree: RadixTree = field(default_factory=RadixTree)
    total: int = 0
    reused: int = 0
    per_request: list[int] = field(default_factory=list)

    # Where each chunk (message) of the last request ended in the tree, and at which token:
    # a later request that shares its first chunks walks on from there instead of the root.
    marks: list[tuple[Cursor | None, int]] = field(default_factory=lambda: [(None, 0)])

    @property
    def last_len(self) -> int:
        return self.marks[-1][1]

    def add(self, ids: Sequence[int]) -> int:
        return self.add_chunks([ids], shared=0)

    def add_chunks(self, chunks: Sequence[Sequence[int]], shared: int) -> int:
        """The request is the previous request's first `shared` chunks followed by `chunks`.

        The walk starts where those shared chunks ended, so a step costs its new tokens, not
        the whole prompt. Marks up to the divergence point stay valid: an edge split keeps its
        upper part in the same node, and every split happens at or after that point."""
        at, before = self.marks[shared]
        marks = self.marks
        del marks[shared + 1 :]
        hit, matching = before, True
        for ids in chunks:
            if matching:
                walked = self.tree.walk(ids, at)[0]
                hit += walked
                matching = walked == len(ids)
            at = self.tree.insert(ids, at)
            marks.append((at, marks[-1][1] + len(ids)))
        self.total += self.last_len
        self.reused += hit
        self.per_request.append(hit)
        return hit

    @property
    def rate(self) -> float | None:
        return round(self.reused / self.total, 4) if self.total else None
