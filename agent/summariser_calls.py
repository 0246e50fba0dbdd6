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
from agent.state import RunState
from core.events import SummaryReplied
from core.types import ModelReply
from memory.summariser import Summariser, SummaryRequest, answer, describe_failure, request_digest


class JournaledSummariser:
    def __init__(self, inner: Summariser, journal: Journal, state: RunState, recorded: Iterable[SummaryReplied] = ()):
        self.inner, self.journal, self.state = inner, journal, state
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
            self.journal.append(record.model_copy(update={"error": describe_failure(e)}))
            raise
        self.journal.append(record.model_copy(update={"reply": reply}))
        return reply
