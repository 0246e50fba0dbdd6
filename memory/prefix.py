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


def _common(label: list[int], ids: Sequence[int], pos: int) -> int:
    n = min(len(label), len(ids) - pos)
    if label[:n] == ids[pos : pos + n]:  # the usual case, compared at C speed
        return n
    i = 0
    while i < n and label[i] == ids[pos + i]:
        i += 1
    return i


class RadixTree:
    def __init__(self) -> None:
        self.root = _Node()

    def longest_prefix(self, ids: Sequence[int]) -> int:
        node, pos = self.root, 0
        while pos < len(ids):
            child = node.children.get(ids[pos])
            if child is None:
                return pos
            k = _common(child.label, ids, pos)
            pos += k
            if k < len(child.label):
                return pos
            node = child
        return pos

    def insert(self, ids: Sequence[int]) -> None:
        ids = list(ids)
        node, pos = self.root, 0
        while pos < len(ids):
            child = node.children.get(ids[pos])
            if child is None:
                node.children[ids[pos]] = _Node(ids[pos:])
                return
            k = _common(child.label, ids, pos)
            if k < len(child.label):  # split the edge where the new sequence leaves it
                rest = _Node(child.label[k:], child.children)
                child.label, child.children = child.label[:k], {rest.label[0]: rest}
            pos += k
            node = child


@dataclass
class PrefixReuse:
    """Accumulates, request by request, how many prompt tokens an ideal cache would have served."""

    tree: RadixTree = field(default_factory=RadixTree)
    total: int = 0
    reused: int = 0
    per_request: list[int] = field(default_factory=list)

    def add(self, ids: Sequence[int]) -> int:
        hit = self.tree.longest_prefix(ids)
        self.tree.insert(ids)
        self.total += len(ids)
        self.reused += hit
        self.per_request.append(hit)
        return hit

    @property
    def rate(self) -> float | None:
        return round(self.reused / self.total, 4) if self.total else None
