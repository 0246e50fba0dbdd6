"""Continuous batching: which sequences run in the next step, and how many tokens each.

Each step has a token budget. Running sequences go first, oldest first: a decode
costs one token, a prompt still being prefilled takes what is left of the budget
(chunked prefill), so a long prompt never stalls the decodes running beside it.
Then waiting requests are admitted, oldest first, while budget, sequence slots
and KV blocks last. Admission first matches the request against the prefix cache.

A request may carry a `ReturnHint` (sequence.py): when it finishes, the prefix cache
holds what it computed for its session (evicted only once no unheld block is left;
radix.py says in what order); the session's next request keeps that hold from expiring
while it waits, and ends it when admitted.

When a running sequence needs a block and none can be freed (even by evicting
unlocked prefix-cache leaves), the newest running sequence is preempted by
recompute: its computed blocks go to the prefix cache, the rest are freed, and it
goes back to the front of the waiting queue; re-admission recomputes what the
cache no longer holds. Sampled tokens are kept, so its output does not change.

A running sequence hands each block to the prefix cache as soon as the block is full
(`share_computed`), not when it finishes, so requests admitted meanwhile can borrow
it: many conversations opened at once share their system prompt from the second
step on, instead of each prefilling it.
"""

import logging
from collections import deque
from dataclasses import dataclass

from engine.config import EngineConfig
from engine.kv_cache import BlockPool
from engine.radix import RadixCache
from engine.sequence import Sequence, Status

log = logging.getLogger("engine")


@dataclass
class ScheduledBatch:
    items: list[tuple[Sequence, int]]  # (sequence, tokens to compute this step)
    num_preempted: int = 0

    def __bool__(self) -> bool:
        return bool(self.items)


class Scheduler:
    def __init__(
        self, config: EngineConfig, pool: BlockPool, radix: RadixCache | None, eos_ids: frozenset[int] = frozenset()
    ):
        self.config = config
        self.eos_ids = eos_ids
        self.block_size = config.block_size
        self.pool = pool
        self.radix = radix
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.total_preemptions = 0

    def add(self, seq: Sequence) -> None:
        if self.radix is not None and seq.hint is not None:
            self.radix.arrived(seq.hint.session)
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    # ------------------------------------------------------------ blocks

    def _blocks_needed(self, seq: Sequence, num_tokens: int) -> int:
        needed = -(-(seq.num_computed + num_tokens) // self.block_size)
        return max(0, needed - seq.num_blocks)

    def _make_free(self, n: int) -> bool:
        """Make n blocks free, evicting unlocked prefix-cache leaves if need be."""
        short = n - self.pool.num_free
        if short > 0 and self.radix is not None:
            self.radix.evict(short)
        return self.pool.num_free >= n

    def _release(self, seq: Sequence) -> None:
        """Give a sequence's blocks back: computed full blocks to the prefix cache, the rest freed."""
        if self.radix is not None:
            full = seq.num_computed // self.block_size
            table = seq.block_table
            unused = self.radix.insert(seq.token_ids[: full * self.block_size], table[:full])
            n_prefix = len(seq.prefix_nodes)
            self.pool.free(unused + table[max(full, n_prefix) :])
            self.radix.unlock(seq.prefix_nodes)
        else:
            self.pool.free(seq.owned_blocks)
        seq.prefix_nodes = []
        seq.owned_blocks = []

    def reserve_next(self, seqs: list[Sequence]) -> bool:
        """Blocks for the token after the one each sequence is computing now (a decode step
        launched ahead, engine/step.py); False when the pool runs short even after evicting cached
        leaves: the next step is then scheduled, which may preempt."""
        for seq in seqs:
            need = self._blocks_needed(seq, 2)
            if not self._make_free(need):
                return False
            seq.owned_blocks += self.pool.allocate(need)
        return True

    # ------------------------------------------------------------ lifecycle

    def finish(self, seq: Sequence, reason: str) -> None:
        if seq.output is not None:
            seq.output.close()
        seq.finish_reason = reason
        seq.status = Status.FINISHED
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self._release(seq)
        if self.radix is not None and seq.hint is not None:
            if reason in ("stop", "length"):
                self.radix.hold(seq.hint.session, seq.token_ids[: seq.num_computed], seq.hint.within_s)
            else:  # aborted or failed, perhaps while queued: nothing says the session is coming back
                self.radix.release(seq.hint.session)

    def postprocess(self, seqs: list[Sequence], tokens: list[int], now: float) -> None:
        """Append each sequence's sampled token, extend its text, and finish the ones that are
        done: an EOS or stop token (kept in the ids, never in the text), a stop string (cut
        off the text), or max_tokens."""
        for seq, token in zip(seqs, tokens):
            seq.token_ids.append(token)
            if seq.first_token_time is None:
                seq.first_token_time = now
            p = seq.params
            reason = None
            if (
                (token in self.eos_ids and not p.ignore_eos)
                or token in p.stop_token_ids
                or seq.output is not None
                and seq.output.push(token)
            ):
                reason = "stop"
            if reason is None and seq.num_output >= seq.max_tokens:
                reason = "length"
            if reason is not None:
                seq.finish_time = now
                self.finish(seq, reason)

    def share_computed(self, seq: Sequence, computed: int) -> None:
        """Move the sequence's blocks that its first `computed` tokens fill into the prefix
        cache, locked by it, so other requests can match them while it runs. A block whose
        tokens another request cached first stays this sequence's own (freed when it
        finishes), and so do the ones after it, since a cached path must run from the root."""
        if self.radix is None:
            return
        bs = self.block_size
        parent = seq.prefix_nodes[-1] if seq.prefix_nodes else self.radix.root
        for i in range(len(seq.prefix_nodes), computed // bs):
            key = tuple(seq.token_ids[i * bs : (i + 1) * bs])
            if key in parent.children:
                return
            # The block table is the borrowed prefix, then owned blocks in order: block i is owned_blocks[0].
            node = self.radix.add_child(parent, key, seq.owned_blocks.pop(0))
            self.radix.lock([node])
            seq.prefix_nodes.append(node)
            parent = node

    def _preempt(self, seq: Sequence, reason: str) -> None:
        log.info("preempting %s (%d tokens computed) by recompute: %s", seq.request_id, seq.num_computed, reason)
        self._release(seq)
        self.running.remove(seq)
        seq.num_computed = 0
        seq.status = Status.WAITING
        seq.num_preemptions += 1
        self.total_preemptions += 1
        self.waiting.appendleft(seq)

    def _admit_match(self, seq: Sequence) -> None:
        """Borrow the longest cached prefix. At least one token is always left to
        compute, because the last prompt token's logits are needed to sample."""
        if self.radix is None:
            return
        path = self.radix.match(seq.token_ids[: len(seq.token_ids) - 1])
        self.radix.lock(path)
        seq.prefix_nodes = path
        seq.num_computed = len(path) * self.block_size

    def _unmatch(self, seq: Sequence) -> None:
        if self.radix is not None:
            self.radix.unlock(seq.prefix_nodes)
        seq.prefix_nodes = []
        seq.num_computed = 0

    # ------------------------------------------------------------ one step

    def schedule(self) -> ScheduledBatch:
        if self.radix is not None:
            self.radix.expire()
        budget = self.config.max_num_batched_tokens
        batch = ScheduledBatch([])
        for seq in sorted(self.running, key=lambda s: s.arrival):
            if budget == 0:
                break
            if seq.status is not Status.RUNNING:
                continue  # preempted earlier in this loop
            n = min(seq.num_uncomputed, budget)
            need = self._blocks_needed(seq, n)
            while not self._make_free(need):
                victim = max(self.running, key=lambda s: s.arrival)
                self._preempt(
                    victim, f"no free KV block for {seq.request_id} ({need} needed, {self.pool.num_free} free)"
                )
                batch.num_preempted += 1
                if victim is seq:
                    break
            if seq.status is not Status.RUNNING:
                continue
            seq.owned_blocks += self.pool.allocate(need)
            batch.items.append((seq, n))
            budget -= n
        if batch.num_preempted:
            return self._order(batch)  # memory is short: admit nothing new this step
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            seq = self.waiting[0]
            self._admit_match(seq)
            n = min(seq.num_uncomputed, budget)
            need = self._blocks_needed(seq, n)
            if not self._make_free(need):
                self._unmatch(seq)
                break
            if seq.cached_tokens is None:
                seq.cached_tokens = seq.num_computed
                if self.radix is not None:
                    self.radix.count_hits(seq.prefix_nodes)
            if self.radix is not None and seq.hint is not None:
                self.radix.release(seq.hint.session)  # it came back: its blocks are locked now
            seq.owned_blocks += self.pool.allocate(need)
            self.waiting.popleft()
            seq.status = Status.RUNNING
            self.running.append(seq)
            batch.items.append((seq, n))
            budget -= n
        return self._order(batch)

    @staticmethod
    def _order(batch: ScheduledBatch) -> ScheduledBatch:
        # Single-token queries first: attention batches them in one call.
        batch.items.sort(key=lambda item: item[1] != 1)
        return batch
