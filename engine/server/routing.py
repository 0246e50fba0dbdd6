"""Ray Serve request routers for engine replicas: round robin, least loaded, and two affinity
routers (`prefix`, `session`) that send a request where its prompt's KV blocks are likely cached.

They plug into Serve's own extension point (`RequestRouter`, chosen per deployment by
`request_router_class`): Serve probes queue lengths, retries and replaces dead replicas; a router
only ranks the replicas. Each request's first argument is a `Forwarded` (engine/server/forward.py)
carrying what a router reads: its prompt's block hashes and its session key.

An affinity router keeps, for each key it has seen, the replica it last sent that key to. `prefix`
keys are the chained hashes of the prompt's full token blocks (the radix cache's block size), so
the deepest known hash names the replica holding the longest cached prefix; `session` has one key,
the session the harness sends with every request. Both fall back to the least loaded replica when
the preferred one is more than `imbalance` requests busier than the least busy one, or when the
known prefix is under `min_match` of the prompt's blocks (a shared system prompt alone), as the
SGLang router and Serve's PrefixCacheAffinityRouter do, so that one hot prefix cannot crowd a replica.
"""

import itertools
import random
from collections import OrderedDict

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

from engine.server.forward import ROUTER_NAMES

MAX_KEYS = 1 << 16  # keys remembered per router, least recently used dropped first


def _forwarded(request: PendingRequest | None):
    return request.args[0] if request is not None and request.args else None


class _Router(RequestRouter):
    """What every router here shares: a request pinned to one replica (/metrics, /reset_prefix_cache) goes there."""

    async def choose_replicas(
        self, candidate_replicas: list[RunningReplica], pending_request: PendingRequest | None = None
    ) -> list[list[RunningReplica]]:
        forwarded = _forwarded(pending_request)
        if forwarded is not None and forwarded.replica:
            return [[r for r in candidate_replicas if r.replica_id.to_full_id_str() == forwarded.replica]]
        return self.rank(sorted(candidate_replicas, key=lambda r: r.replica_id.unique_id), forwarded)

    def rank(self, candidates: list[RunningReplica], forwarded) -> list[list[RunningReplica]]:
        """Ranks of replicas, most preferred first; Serve takes the least busy one of the first rank
        that has room (the first of equals, hence the shuffle: idle replicas share the work)."""
        return [random.sample(candidates, len(candidates))]


class LeastLoadedRouter(_Router):
    pass


class RoundRobinRouter(_Router):
    def initialize_state(self, **kwargs) -> None:
        self._turn = itertools.count()

    def rank(self, candidates, forwarded):
        return [[candidates[next(self._turn) % len(candidates)]]] if candidates else []


class _AffinityRouter(_Router):
    def initialize_state(self, imbalance: int = 4, min_match: float = 0.5, **kwargs) -> None:
        self._imbalance = imbalance
        self._min_match = min_match
        self._owner: OrderedDict[object, ReplicaID] = OrderedDict()

    def keys(self, forwarded) -> list:
        """The request's affinity keys, the most specific last."""
        raise NotImplementedError

    def _queue_len(self, replica: RunningReplica) -> int:
        return self._replica_queue_len_cache.get(replica.replica_id) or 0

    def rank(self, candidates, forwarded):
        by_id = {r.replica_id: r for r in candidates}
        keys = self.keys(forwarded) if forwarded is not None else []
        for matched in range(len(keys), 0, -1):
            owner = by_id.get(self._owner.get(keys[matched - 1]))
            if owner is None:
                continue
            # A match of a small part (a shared system prompt) is no reason to crowd one replica.
            least = min(self._queue_len(r) for r in candidates)
            if matched >= self._min_match * len(keys) and self._queue_len(owner) - least <= self._imbalance:
                return [[owner], super().rank(candidates, forwarded)[0]]
            break
        return super().rank(candidates, forwarded)

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result) -> None:
        forwarded = _forwarded(pending_request)
        if forwarded is None or forwarded.replica:
            return
        for key in self.keys(forwarded):
            self._owner[key] = replica_id
            self._owner.move_to_end(key)
        while len(self._owner) > MAX_KEYS:
            self._owner.popitem(last=False)


class PrefixRouter(_AffinityRouter):
    def keys(self, forwarded) -> list:
        return list(forwarded.block_hashes)


class SessionRouter(_AffinityRouter):
    def keys(self, forwarded) -> list:
        return [forwarded.session] if forwarded.session else []


ROUTERS = {
    "round_robin": RoundRobinRouter,
    "least_loaded": LeastLoadedRouter,
    "prefix": PrefixRouter,
    "session": SessionRouter,
}
assert tuple(ROUTERS) == ROUTER_NAMES
