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
- `hold(session, tokens, seconds)` keeps a session's path ahead of LRU while its client is
  away (an agent running a tool), until the hold expires, the session's next request is
  admitted (`release`; from its arrival, `arrived`, the hold no longer expires), or
  running requests need the blocks and nothing else is left to evict.
- `evict(n)` frees least-recently-used unlocked leaves until n blocks are free: the
  leaves no live hold covers, in LRU order; then held ones: first those of sessions away,
  the earliest deadline first, then those of sessions whose next request is queued, the
  one queued last first. With one timeout for every session, the first part is LRU again:
  the time between two tool calls is heavy-tailed, so the agent away longest is the one
  likeliest to stay away. The second part is Belady's order: the engine admits in arrival
  order, so the session queued last needs its blocks last (and one away comes back behind
  every queued one).
"""

import heapq
import itertools
import math
import time
from collections.abc import Callable
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
    held: int = 0  # sessions holding this node (their paths run through it)
    held_until: float = 0.0  # the latest deadline of those holds
    queued: int = 0  # the earliest queue place of those sessions' next requests (0: none queued)
    spared: bool = False  # an eviction passed over it for its hold, where LRU would have taken it


def _due(node: Node) -> tuple[float, int, int]:
    """Held blocks' eviction order: sessions away, the earliest deadline first; then sessions whose next
    request is queued, the one queued last first (the engine admits in arrival order, so its blocks
    are the ones needed last); LRU among equals."""
    return node.held_until, -node.queued, node.last_access


@dataclass
class Hold:
    path: list[Node]
    until: float  # on the cache's clock


class RadixCache:
    def __init__(self, pool: BlockPool, block_size: int, clock: Callable[[], float] = time.monotonic):
        self.pool = pool
        self.block_size = block_size
        self.clock = clock
        self.root = Node((), -1, None)
        self.num_nodes = 0
        self.num_locked = 0
        self.num_evicted = 0  # blocks evicted over the cache's life
        self.holds: dict[str, Hold] = {}
        self.num_held = 0  # cached blocks a live hold covers
        self.num_held_evicted = 0  # held blocks evicted because nothing else was left
        self.num_queued_evicted = 0  # of them, blocks of sessions whose next request was queued
        self.num_saved_hits = 0  # blocks matched that an eviction had spared for their hold
        self._clock = itertools.count(1)
        self._queue = itertools.count(1)  # places in the engine's queue, in arrival order

    @property
    def num_evictable(self) -> int:
        return self.num_nodes - self.num_locked

    def _keys(self, tokens: list[int]):
        bs = self.block_size
        for i in range(0, len(tokens) - bs + 1, bs):
            yield tuple(tokens[i : i + bs])

    def _walk(self, tokens: list[int]) -> list[Node]:
        node, path = self.root, []
        for key in self._keys(tokens):
            child = node.children.get(key)
            if child is None:
                break
            path.append(child)
            node = child
        return path

    def match(self, tokens: list[int]) -> list[Node]:
        """Longest cached prefix of `tokens`, in whole blocks, as the path of nodes."""
        now = next(self._clock)
        path = self._walk(tokens)
        for node in path:
            node.last_access = now
        return path

    def count_hits(self, path: list[Node]) -> int:
        """Count a request's matched path among the hits holds saved; returns the blocks saved."""
        saved = 0
        for node in path:
            if node.spared:
                node.spared = False
                saved += 1
        self.num_saved_hits += saved
        return saved

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

    # ------------------------------------------------------------ holds

    def hold(self, session: str, tokens: list[int], seconds: float) -> int:
        """Keep the cached prefix of `tokens` ahead of LRU for `seconds`, as `session`'s (replacing
        what the session held before); returns the blocks held."""
        self.release(session)
        path = self._walk(tokens)
        until = self.clock() + seconds
        for node in path:
            if node.held == 0:
                self.num_held += 1
            node.held += 1
            node.held_until = max(node.held_until, until)
        self.holds[session] = Hold(path, until)
        return len(path)

    def arrived(self, session: str) -> None:
        """The session's next request is queued: hold its blocks, last of all, until it is admitted."""
        hold = self.holds.get(session)
        if hold is None:
            return
        hold.until = math.inf
        place = next(self._queue)
        for node in hold.path:
            if node.held:
                node.held_until = math.inf
                node.queued = min(node.queued or place, place)

    def release(self, session: str) -> None:
        """End the session's hold, if it has one: its blocks go back to plain LRU."""
        hold = self.holds.pop(session, None)
        if hold is None:
            return
        for node in hold.path:
            if node.held > 0:  # 0: evicted meanwhile
                node.held -= 1
                if node.held == 0:
                    self.num_held -= 1
                    node.held_until, node.queued = 0.0, 0

    def expire(self) -> None:
        now = self.clock()
        for session in [s for s, h in self.holds.items() if h.until <= now]:
            self.release(session)

    # ------------------------------------------------------------ eviction

    def evict(self, num_blocks: int) -> int:
        """Free up to `num_blocks` blocks from unlocked leaves, held ones last; returns how many were freed."""
        self.expire()
        freed = self._drop(num_blocks)
        self.num_evicted += freed
        return freed

    def clear(self) -> int:
        """Drop every block no running request holds, held ones too (a reset, not counted as evictions)."""
        for session in list(self.holds):
            self.release(session)
        return self._drop(self.num_nodes)

    def _drop(self, num_blocks: int) -> int:
        leaves = [(n.last_access, id(n), n) for n in self._iter_nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed: list[int] = []
        passed: list[Node] = []  # held leaves passed over, oldest first
        newest = 0  # the last use of the youngest leaf freed in LRU order
        while leaves and len(freed) < num_blocks:
            _, _, node = heapq.heappop(leaves)
            if node.held:
                passed.append(node)
                continue
            newest = node.last_access
            self._remove(node, freed, leaves)
        for node in passed:
            self._spare(node, newest)
        if len(freed) < num_blocks and passed:
            # Nothing unheld is left: held leaves go, in _due's order.
            due = [(*_due(n), id(n), n) for n in passed]
            heapq.heapify(due)
            while due and len(freed) < num_blocks:
                *_, node = heapq.heappop(due)
                self.num_held_evicted += 1
                self.num_queued_evicted += node.held_until == math.inf
                self._remove(node, freed, due, key=_due)
        self.pool.free(freed)
        return len(freed)

    @staticmethod
    def _spare(leaf: Node, newest: int) -> None:
        """Mark a held leaf LRU would have evicted before a block it did take, and the ancestors
        that would have followed it (each left a leaf by the one below, and as old)."""
        node: Node | None = leaf
        while node is not None and node.parent is not None and node.last_access < newest:
            node.spared = True
            if len(node.parent.children) != 1 or node.parent.lock_ref:
                break
            node = node.parent

    def _remove(self, node: Node, freed: list[int], heap: list, key=lambda n: (n.last_access,)) -> None:
        """Take a leaf out of the tree; its parent joins the heap once it is an unlocked leaf."""
        parent = node.parent
        assert parent is not None
        del parent.children[node.key]
        self.num_nodes -= 1
        if node.held:
            node.held, node.queued = 0, 0
            self.num_held -= 1
        freed.append(node.block)
        if parent is not self.root and not parent.children and parent.lock_ref == 0:
            heapq.heappush(heap, (*key(parent), id(parent), parent))

    def _iter_nodes(self):
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children.values())

    def cached_blocks(self) -> set[int]:
        return {n.block for n in self._iter_nodes()}
