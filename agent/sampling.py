"""Sampling: the run's model answering an MCP server that asks it for a reply during one of its tool calls.

Only a server whose settings allow it (`sampling = true`) is answered (tools/mcp/sampling.py). The request
goes to the run's own model client with no tools and the policy's model parameters (the seed mixed with the
step, the call and the request's place among the call's requests, core.policy.step_params), its reply capped
at the smaller of the server's and the policy's max_tokens, transient errors retried as the loop's are. Each
reply is journaled as `sampling_replied` with its cost, and counts in the run's usage, cost and budgets like
any model call. A call made again (a resumed step) is answered from the replies journaled for it, in order, while the
request is the same, so the model is not asked twice; a replay that runs its tools again (`--execute`) is
answered only from the recording, so its model is never asked.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Sequence
from functools import partial

from agent.journal.store import Journal
from agent.models.base import ModelClient
from agent.models.pricing import Price, cost_usd
from agent.retry import with_retries
from agent.run.state import RunState, spend
from core.errors import PermanentModelError, TransientModelError
from core.events import SamplingReplied
from core.policy import HarnessPolicy, step_params
from core.types import Message, ModelReply, Usage
from tools.base import SamplingRefused


class Sampling:
    """`recorded`: replies journaled before (a resumed run's, or the recording a replay plays); `ask`: whether the
    model may be asked when none of them answers (False for a replay)."""

    def __init__(
        self,
        model: ModelClient,
        policy: HarnessPolicy,
        journal: Journal,
        state: RunState,
        price: Price | None,
        recorded: Sequence[SamplingReplied] = (),
        ask: bool = True,
    ):
        self.model = model
        self.policy = policy
        self.journal = journal
        self.state = state
        self.price = price
        self.ask = ask
        self.recorded: dict[str, deque[SamplingReplied]] = defaultdict(deque)
        self.asked: dict[str, int] = defaultdict(int)  # requests per call so far, recorded or not: mixed with the seed
        for e in recorded:
            self.recorded[e.call_id].append(e)

    def __call__(self, step: int, call_id: str, server: str, messages: list[Message], max_tokens: int) -> ModelReply:
        params = step_params(self.policy.model, step, "sampling", call_id, self.asked[call_id]).model_copy(
            update={"max_tokens": max(1, min(max_tokens, self.policy.model.max_tokens))}
        )
        self.asked[call_id] += 1
        digest = hashlib.sha256(
            json.dumps([[m.model_dump(mode="json") for m in messages], params.max_tokens]).encode()
        ).hexdigest()
        earlier = self.recorded[call_id]
        if earlier and earlier[0].request_sha256 == digest:
            e = earlier.popleft()
            if not self.ask:  # a recording's reply: the replay's journal keeps it too, as the run's kept it
                self.journal.append(e.model_copy(update={"step": step}))
                spend(self.state, e.cost_usd)
                self.state.usage = self.state.usage + (e.reply.usage if e.reply is not None else Usage())
            if e.reply is None:
                raise SamplingRefused(e.error or "the model call failed")
            return e.reply
        if not self.ask:
            raise SamplingRefused("the recording holds no reply of the model to this request")
        replied = partial(
            SamplingReplied,
            step=step,
            server=server,
            call_id=call_id,
            request_sha256=digest,
            request_messages=len(messages),
        )
        errs = self.policy.errors
        try:
            reply = with_retries(
                lambda: self.model.complete(messages, [], params),
                errs.model_attempts,
                errs.backoff_multiplier_s,
                errs.backoff_max_s,
            )
        except (TransientModelError, PermanentModelError) as e:
            error = f"{type(e).__name__}: {e}"
            self.journal.append(replied(error=error))
            raise SamplingRefused(f"the run's model could not answer: {error}") from None
        cost = cost_usd(self.price, reply.usage)
        self.journal.append(replied(reply=reply, cost_usd=cost))
        spend(self.state, cost)
        self.state.usage = self.state.usage + reply.usage
        return reply
