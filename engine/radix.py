"""Radix-tree prefix cache over token ids, at block granularity.

Every edge of the tree is exactly one full KV block (block_size token ids), so a
match, an insert or an eviction never splits a block: the tree is the block-paged
form of SGLang's radix cache. A node owns the KV block holding its tokens.

- `match(tokens)` walks the longest cached prefix of whole blocks.
- `lock(path)` / `unlock(path)` pin a path while a request runs on it; locking a
  node always locks its ancestors too, so an unlocked node has no locked descendant.
- `insert(tokens, blocks)` adds a finished request's blocks; blocks whose tokens are
  already cached are handed back to be freed. `add_child` adds one block under a node,
  for a running request handing over blocks as it fills them.
- `evict(n)` frees least-recently-used unlocked leaves until n blocks are free.
"""

import heapq
import itertools
from dataclasses import dataclass, field

from engine.kv_cache import BlockPool


@dataclass(eq=False)
class Node:
    key: tuple[int, ...]
    block: int
    parent: "Node | None"
    children: dict[tuple[int, ...], "Node"] = field(default_factory=dict)
    lock_ref: int = 0
    last_access: int = 0


class RadixCache:
    def __init__(self, pool: BlockPool, block_size: int):
        self.pool = pool
        self.block_size = block_size
        self.root = Node((), -1, None)
        self.num_nodes = 0
        self.num_locked = 0
        self.num_evicted = 0  # blocks evicted over the cache's life
        self._clock = itertools.count(1)

    @property
    def num_evictable(self) -> int:
        return self.num_nodes - self.num_locked

    def _keys(self, tokens: list[int]):
        bs = self.block_size
        for i in range(0, len(tokens) - bs + 1, bs):
            yield tuple(tokens[i : i + bs])

    def match(self, tokens: list[int]) -> list[Node]:
        """Longest cached prefix of `tokens`, in whole blocks, as the path of nodes."""
        now = next(self._clock)
        node, path = self.root, []
        for key in self._keys(tokens):
            child = node.children.get(key)
            if child is None:
                break
            child.last_access = now
            path.append(child)
            node = child
        return path

    def lock(self, path: list[Node]) -> None:
        for node in path:
            if node.lock_ref == 0:
                self.num_locked += 1
            node.lock_ref += 1

    def unlock(self, path: list[Node]) -> None:
        for node in path:
            node.lock_ref -= 1
            assert node.lock_ref >= 0, "unlock without lock"
            if node.lock_ref == 0:
                self.num_locked -= 1

    def insert(self, tokens: list[int], blocks: list[int]) -> list[int]:
        """Cache the full blocks of `tokens` (blocks[i] holds block i). The tree takes
        ownership of the blocks it keeps; returns the ones it did not need (duplicates)."""
        now = next(self._clock)
        node, unused = self.root, []
        for key, block in zip(self._keys(tokens), blocks):
            child = node.children.get(key)
            if child is None:
                child = self.add_child(node, key, block)
            elif child.block != block:
                unused.append(block)  # same tokens already cached in another block
            child.last_access = now
            node = child
        return unused

    def add_child(self, parent: Node, key: tuple[int, ...], block: int) -> Node:
        """Cache `block` (holding tokens `key`) under `parent`, which must not have that key yet."""
        child = Node(key, block, parent, last_access=next(self._clock))
        parent.children[key] = child
        self.num_nodes += 1
        return child

    def evict(self, num_blocks: int) -> int:
        """Free up to `num_blocks` blocks from LRU unlocked leaves; returns how many were freed."""
        freed = self._drop(num_blocks)
        self.num_evicted += freed
        return freed

    def clear(self) -> int:
        """Drop every block no running request holds (a reset, not counted as evictions)."""
        return self._drop(self.num_nodes)

    def _drop(self, num_blocks: int) -> int:
        leaves = [(n.last_access, id(n), n) for n in self._iter_nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed: list[int] = []
        while leaves and len(freed) < num_blocks:
            _, _, node = heapq.heappop(leaves)
            parent = node.parent
            del parent.children[node.key]
            self.num_nodes -= 1
            freed.append(node.block)
            if parent is not self.root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (parent.last_access, id(parent), parent))
        self.pool.free(freed)
        return len(freed)

    def _iter_nodes(self):
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children.values())

    def cached_blocks(self) -> set[int]:
        return {n.block for n in self._iter_nodes()}
