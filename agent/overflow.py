"""Overflow recovery: a prompt too long for the model's window makes room instead of ending the run.

`overflow.on_overflow` names the recoveries one step may try, in order. `compact` folds old steps into
the working memory at once (asking the run's summariser, or the extractive one when a request to the
summariser would not fit the window either); `truncate` cuts the largest observations in the prompt.
Each recovery is one `context_overflow` event, journaled before the step's model call, naming what it
dropped; resume and replay take its fold and cuts back from the journal, as they do a compaction's
fold. The loop stops with `context_exhausted` once a step's recoveries are spent and the prompt still
does not fit: recoveries that no longer make room end the run instead of looping.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.dispatch import Cap
from agent.parts import Loop
from agent.run.stopping import Stop
from core.context_policy import Compact
from core.events import ContextOverflowed, Cut
from core.policy import HarnessPolicy
from core.types import Message, ModelReply, Observation, Truncation
from memory.compaction import compact
from memory.extractive import ExtractiveSummariser
from memory.render import compact_step
from memory.summariser import Summariser, SummaryRequest
from memory.tokens import TokenCounter
from memory.truncate import cut_to_tokens

RECOVERIES = {"compact": ("compact", "truncate"), "truncate": ("truncate",), "stop": ()}
MIN_CUT_TOKENS = 64  # an observation is never cut below this: the notice and a line or two of each end


def exhausted(overflow: Stop, policy: HarnessPolicy) -> Stop:
    """The stop of a step whose prompt still does not fit once its recoveries are spent."""
    on = policy.overflow.on_overflow
    if on == "stop":
        return overflow
    tried = ", then ".join(RECOVERIES[on])
    return Stop(
        "context_exhausted",
        f"The prompt still does not fit after this step's recoveries (overflow.on_overflow = {on!r}: {tried}); "
        f"{overflow.message}",
        overflow.outcome,
    )


def make_room(loop: Loop, recoveries: list[str], prompt: list[Message], overflow: Stop) -> bool:
    """Take the step's next recoveries until one changes the prompt; False once none is left. One that changes
    nothing is journaled too, and the prompt is not rendered or sent again for it."""
    while recoveries:
        if recover(loop, recoveries.pop(0), prompt, overflow):
            return True
    return False


def recover(loop: Loop, action: str, prompt: list[Message], overflow: Stop) -> bool:
    """One recovery of the step's prompt, journaled as a `context_overflow` event; the state takes its fold or
    cuts. Whether it changed the prompt."""
    session, state = loop.session, loop.state
    tokens = loop.renderer.tokens(prompt)
    source = overflow.outcome.get("source", "counted")
    room = target(session.context_window, session.policy.model.max_tokens, tokens, overflow.outcome)
    done = compact_now(loop, prompt) if action == "compact" else {"cuts": cuts_to_fit(loop, prompt, tokens - room)}
    after = loop.renderer.tokens(loop.renderer.render(state.history, state.folds, state.cuts))
    session.journal.append(
        ContextOverflowed(
            step=state.step,
            source=source,
            tokens=tokens,
            window=session.context_window,
            reply_tokens=session.policy.model.max_tokens,
            action=action,
            tokens_after=after,
            **done,
        )
    )
    return bool(done.get("fold") or done.get("cuts"))


def target(window: int | None, reply_tokens: int, tokens: int, outcome: dict) -> int:
    """The prompt tokens, by the harness's count, to get under. A provider that refused a prompt the harness
    counted as fitting counts with another tokenizer: where it said its count and its limit, the room it has
    is scaled to the harness's count; otherwise the aim is a tenth under what was sent."""
    limit = window - reply_tokens if window is not None else tokens
    if outcome.get("source") != "provider":
        return limit
    said, most = outcome.get("provider_tokens"), outcome.get("provider_limit")
    if said and most:
        return min(limit, (most - reply_tokens) * tokens // said) * 19 // 20
    return min(limit, tokens) * 9 // 10


def compact_now(loop: Loop, prompt: list[Message]) -> dict:
    """Fold every step but the newest `overflow.keep_recent_steps` into the working memory."""
    state, counter = loop.state, loop.accounting.counter
    cfg = emergency_compact(loop.session.policy)
    room = (loop.session.context_window or 0) - loop.session.policy.model.max_tokens
    extractive = ExtractiveSummariser(counter)
    if loop.session.policy.overflow.summariser == "extractive":
        summariser: Summariser = extractive
    else:
        summariser = FittingSummariser(loop.summariser, extractive, counter, room)
    history = loop.renderer.with_cuts(state.history, state.cuts)
    store = loop.session.memory
    memory = store.as_of(state.step, loop.session.policy.memory.superseded_shown) if store is not None else None
    result = compact(
        history,
        state.folds,
        cfg,
        prompt,
        counter,
        summariser,
        "overflow",
        loop.shown,
        loop.session.context_window,
        memory,
    )
    state.usage = state.usage + result.usage  # a summary is spending too, as a scheduled compaction's is
    if result.fold is not None:
        state.folds.append(result.fold)
    return {
        "fold": result.fold,
        "summariser_usage": result.usage,
        "attempts": [a.model_dump() for a in result.attempts],
        "message": result.message,
    }


def emergency_compact(policy: HarnessPolicy) -> Compact:
    """The policy's own compaction (its layout and caps), keeping fewer steps, asking with a fresh prompt:
    a fork of the prompt that did not fit would not fit either."""
    cfg = compact_step(policy.context) or Compact()
    keep = min(cfg.keep_recent_steps, policy.overflow.keep_recent_steps)
    return cfg.model_copy(update={"keep_recent_steps": keep, "summariser_prompt": "fresh"})


class FittingSummariser:
    """Asks `inner` unless the request would not fit in `room` tokens with its reply; then the extractive
    summariser answers, which needs no model (and so no window)."""

    def __init__(self, inner: Summariser, fallback: Summariser, counter: TokenCounter, room: int):
        self.inner, self.fallback, self.counter, self.room = inner, fallback, counter, room

    def summarise(self, request: SummaryRequest) -> ModelReply:
        if self.room > 0 and self.counter.prompt_tokens(request.messages) + request.cap > self.room:
            return self.fallback.summarise(request)
        return self.inner.summarise(request)


def cuts_to_fit(loop: Loop, prompt: list[Message], excess: int) -> list[Cut]:
    """Cut the prompt's largest observations, largest first, until `excess` tokens are saved (or none is left
    to cut). The cuts apply to every later prompt (state.cuts); full texts go to artifacts/."""
    state, counter = loop.state, loop.accounting.counter
    shown = loop.renderer.with_cuts(state.history, state.cuts)
    # A stage passes a message it leaves alone through as the same object: those are the ones a cut shrinks.
    where = {id(m): i for i, m in enumerate(shown) if m.role == "tool"}
    outputs = sorted(((m, where[id(m)]) for m in prompt if id(m) in where), key=lambda p: (-counter.count(p[0]), p[1]))
    cuts: list[Cut] = []
    for m, i in outputs:
        if excess <= 0:
            break
        before = len(counter.text_ids(m.text))
        keep = max(MIN_CUT_TOKENS, before - excess)
        if keep >= before:
            continue
        full = state.history[i].text  # the history keeps every observation whole; cuts are made when rendering
        artifact = loop.session.journal.store_artifact(f"overflow-{i:06d}.txt", full)
        text = cut_to_tokens(full, keep, counter, artifact)
        after = len(counter.text_ids(text))
        cut = Cut(index=i, call_id=m.tool_call_id, tool=m.name, tokens_before=before, tokens_after=after, text=text)
        cuts.append(cut.model_copy(update={"artifact": artifact}))
        state.cuts[i] = text
        excess -= before - after
    return cuts


def observation_cap(counter: TokenCounter, window: int | None, policy: HarnessPolicy) -> Cap | None:
    """At dispatch: an observation longer than its share of the window is cut to it (no window: no cap)."""
    if window is None:
        return None
    budget = max(MIN_CUT_TOKENS, int((window - policy.model.max_tokens) * policy.overflow.observation_share))

    def cap(obs: Observation, keep_full: Callable[[], str]) -> Observation:
        if len(counter.text_ids(obs.text)) <= budget:
            return obs
        artifact = keep_full()
        text = cut_to_tokens(obs.text, budget, counter, artifact)
        original = obs.truncation.original_chars if obs.truncation is not None else len(obs.text)
        cut = Truncation(original_chars=original, kept_chars=len(text), artifact=artifact)
        return obs.model_copy(update={"text": text, "truncation": cut})

    return cap
