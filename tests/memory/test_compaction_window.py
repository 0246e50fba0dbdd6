"""One policy for every window size: compaction budgets given as a share of the model's context window
("80%") fold where that share of the window is reached, an 8k model's and a 200k model's alike."""

from __future__ import annotations

import pytest

from agent.tokens import counter_for
from core.context_policy import WINDOW_SHARES, Compact, tokens
from core.errors import HarnessError
from memory.extractive import ExtractiveSummariser
from memory.render import Renderer
from tests.memory.helpers import SYSTEM, TASK, step

COUNTER = counter_for("scripted")  # cl100k (offline): what a run with an API model counts with
POLICY = Compact(trigger_tokens="80%", keep_recent_steps=1)


def grow(cfg: Compact, window: int | None, steps: int, words: int):
    """`steps` steps of about `words` tokens each through the loop's renderer: after each, what the next
    prompt would have cost and the compaction it triggered (if any); folds are kept as the loop keeps them."""
    renderer, summariser = Renderer([cfg], COUNTER, "", window), ExtractiveSummariser(COUNTER)
    output = "word " * words
    history, folds, seen = [SYSTEM, TASK], [], []
    for n in range(1, steps + 1):
        history += step(n, output=f"{n} {output}")
        cost = renderer.tokens(renderer.render(history, folds))
        result = renderer.compact_if_due(history, folds, n, summariser)
        if result is not None and result.fold is not None:
            folds.append(result.fold)
        seen.append((cost, result))
    return seen, folds


@pytest.mark.parametrize("window", [8_000, 200_000])
def test_the_same_policy_compacts_at_80_percent_of_an_8k_and_of_a_200k_window(window):
    seen, _ = grow(POLICY, window, 100, window // 100)
    first = next(i for i, (_, result) in enumerate(seen) if result is not None)
    before, (at, result) = seen[first - 1][0], seen[first]
    assert before < 0.8 * window <= at  # the first prompt to reach 80% of the window, not one sooner
    assert result.trigger == "tokens" and result.ok and result.tokens_before >= 0.8 * window
    assert result.tokens_after < 0.8 * window


@pytest.mark.parametrize("window", [8_000, 200_000])
def test_shares_fold_exactly_as_the_numbers_of_tokens_they_resolve_to(window):
    shares = Compact(trigger_tokens="80%", keep_first_tokens="20%", max_memory_tokens="2%", keep_recent_steps=1)
    numbers = shares.model_copy(update={name: tokens(getattr(shares, name), window) for name in WINDOW_SHARES})
    _, by_share = grow(shares, window, 200, window // 100)
    _, by_number = grow(numbers, None, 200, window // 100)  # numbers need no window
    assert len(by_share) >= 2 and by_share[0].start > 2  # it folded more than once and kept the first steps
    assert by_share == by_number


def test_a_share_of_an_unknown_window_is_a_clear_error_not_a_silent_default():
    with pytest.raises(HarnessError, match="context window"):
        grow(POLICY, None, 100, 80)
