"""The run's summariser with every call journaled: compaction is model work of its own.

Each call becomes a `summary_replied` event as it returns, so the journal holds the
summariser's replies apart from the agent's. A resumed run first answers the calls
of a compaction that the crash cut short from those events, in order, rather than
asking again (the model already gave those replies); later calls are asked and
journaled as usual.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from agent.journal.store import Journal
from agent.models.pricing import Price, cost_usd
from agent.run.state import RunState, spend
from core.errors import TransientModelError
from core.events import SummaryReplied
from core.types import ModelReply
from memory.summariser import Summariser, SummaryRequest, answer, describe_failure, request_digest


class JournaledSummariser:
    def __init__(
        self,
        inner: Summariser,
        journal: Journal,
        state: RunState,
        price: Price | None,
        recorded: Iterable[SummaryReplied] = (),
    ):
        """`price`: the summariser's, when known (it is the run's model); its calls are priced with it."""
        self.inner, self.journal, self.state, self.price = inner, journal, state, price
        self.recorded = deque(recorded)  # already in the journal: answered from there, not journaled again

    def summarise(self, request: SummaryRequest) -> ModelReply:
        if self.recorded:
            return answer(self.recorded.popleft(), request)
        record = SummaryReplied(
            step=self.state.step,
            request_sha256=request_digest(request),
            request_messages=len(request.messages),
            cap=request.cap,
        )
        try:
            reply = self.inner.summarise(request)
        except Exception as e:
            usage = e.usage if isinstance(e, TransientModelError) else None
            cost = cost_usd(self.price, usage)
            self.journal.append(record.model_copy(update={"error": describe_failure(e), "cost_usd": cost}))
            spend(self.state, cost)
            raise
        cost = cost_usd(self.price, reply.usage)
        self.journal.append(record.model_copy(update={"reply": reply, "cost_usd": cost}))
        spend(self.state, cost)
        return reply
