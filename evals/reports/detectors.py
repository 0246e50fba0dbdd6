"""Detectors: pure functions from a run's steps to findings, each with a name and a one-line why.

Every detector reads only the journal (folded into `Step`s) and flags the steps where a
trajectory wasted effort or where the harness hurt the model. Thresholds are module
constants so a report can say exactly what it counted. The drift detectors (evals.reports.drift)
are among them; DRIFT names the ones a run's drift summary counts.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise

from agent.models.base import estimate_tokens
from core.events import Compacted
from core.volatile import normalise
from evals.reports.drift import PERMANENT_KINDS, calls_with_results, re_reads, retried_failed_approaches
from evals.reports.finding import Detector, Finding, call_key, call_tokens, describe, short, step_tokens
from evals.reports.steps import CUT_REASONS, Step, cut_off

# A prompt that changes by at least this share of the previous one, and by this many tokens.
JUMP_SHARE = 0.5
JUMP_MIN_TOKENS = 2000
# A cache break: at least CACHE_MIN_PREFIX tokens of the prompt repeated an earlier prompt's
# prefix (see reusable_tokens), yet less than this share of them was served cached.
CACHE_MIN_PREFIX = 1024
CACHE_EXPECTED_SHARE = 0.5
# Reasoning-heavy: this many times the run's median reasoning per turn, and at least
# REASONING_MIN tokens; or more than REASONING_ALWAYS tokens whatever the median.
REASONING_TIMES_MEDIAN = 3.0
REASONING_MIN = 1000
REASONING_ALWAYS = 8000


def prompt_tokens(step: Step) -> int:
    """Reported prompt tokens; else the harness's own count; else characters over four (estimate_tokens' rule)."""
    if step.reply is None:
        return 0
    return step.usage.prompt_tokens or step.counted_tokens or (step.prompt_chars + 3) // 4


def reasoning_tokens(step: Step) -> int:
    if step.reply is None:
        return 0
    reasoning = step.reply.message.reasoning
    return step.usage.reasoning_tokens or (estimate_tokens(reasoning.text) if reasoning and reasoning.text else 0)


def no_tool_call(steps: list[Step]) -> list[Finding]:
    out = []
    for s in steps:
        if s.reply is None or s.calls:
            continue
        cut = " — the reply was cut off at the token limit" if s.reply.finish_reason == "length" else ""
        text = short(s.reply.message.text) or "(empty reply)"
        out.append(Finding("no_tool_call", s.n, f"The reply had no tool call{cut}: {text}", step_tokens(s)))
    return out


def repeated_action(steps: list[Step]) -> list[Finding]:
    seen: dict[tuple, int] = {}  # (call, result) -> first step
    sent = Counter(call_key(call) for _, call, _ in calls_with_results(steps))
    out = []
    for s, call, obs in calls_with_results(steps):
        if obs is None or obs.error_kind in PERMANENT_KINDS or sent[call_key(call)] < 2:
            continue  # permanent failures have their own detector; a call made once repeats nothing
        key = (call_key(call), obs.status, normalise(obs.text))
        if key in seen and seen[key] != s.n:
            out.append(
                Finding(
                    "repeated_action",
                    s.n,
                    f"{describe(call)} repeats step {seen[key]}'s call and got the same result.",
                    call_tokens(s, obs),
                )
            )
        seen.setdefault(key, s.n)
    return out


def retry_after_permanent_failure(steps: list[Step]) -> list[Finding]:
    failed: dict[tuple[str, str], tuple[int, str]] = {}  # call -> (step, error kind)
    out = []
    for s, call, obs in calls_with_results(steps):
        key = call_key(call)
        if key in failed and failed[key][0] != s.n:
            first, kind = failed[key]
            out.append(
                Finding(
                    "retry_after_permanent_failure",
                    s.n,
                    f"{describe(call)} was sent again after it failed with {kind} at step {first}; the same call cannot succeed.",
                    call_tokens(s, obs),
                )
            )
        if obs is not None and obs.error_kind in PERMANENT_KINDS:
            failed.setdefault(key, (s.n, obs.error_kind))
    return out


def rejected_or_denied(steps: list[Step]) -> list[Finding]:
    return [
        Finding("rejected_or_denied", s.n, f"{o.tool} call {o.call_id} was {o.status}: {short(o.text)}")
        for s in steps
        for o in s.observations
        if o.status in ("rejected", "denied")
    ]


def timeouts(steps: list[Step]) -> list[Finding]:
    out = []
    for s in steps:
        for o in s.observations:
            if o.status == "timeout" or o.error_kind == "timeout":
                out.append(Finding("timeout", s.n, f"{o.tool} timed out after {o.duration_s:.1f} s: {short(o.text)}"))
        for f in s.failures:
            if "timeout" in f.message.lower() or "timed out" in f.message.lower():
                out.append(Finding("timeout", s.n, f"The model call timed out: {short(f.message)}"))
    return out


def cut_off_note(c: Compacted) -> str:
    """What a cut-off did to a compaction, in one sentence."""
    if not c.ok:
        return "The summariser was cut off by its token cap and compaction failed, so the history stayed as it was."
    if c.finish_reason in CUT_REASONS:
        return (
            f"The compaction summary was cut off (finish reason {c.finish_reason}); "
            "the memory that replaced the history is incomplete."
        )
    return (
        "The summariser was cut off by its token cap, so compaction paid for a retry with a larger cap or fewer steps."
    )


def truncated_compaction(steps: list[Step]) -> list[Finding]:
    return [Finding("truncated_compaction", s.n, cut_off_note(c)) for s in steps for c in s.compactions if cut_off(c)]


def context_jump(steps: list[Step]) -> list[Finding]:
    out = []
    for prev, s in replied_pairs(steps):
        before, now = prompt_tokens(prev), prompt_tokens(s)
        change = now - before
        if before and abs(change) >= max(JUMP_MIN_TOKENS, JUMP_SHARE * before):
            verb = "grew" if change > 0 else "shrank"
            cause = _jump_cause(prev, s, change)
            out.append(
                Finding(
                    "context_jump",
                    s.n,
                    f"The prompt {verb} from {before:,} to {now:,} tokens ({change / before:+.0%}){cause}.",
                )
            )
    return out


def replied_pairs(steps: list[Step]) -> Iterator[tuple[Step, Step]]:
    """Each step with a reply, beside the step with a reply before it (steps without one passed over)."""
    return pairwise(s for s in steps if s.reply is not None)


def _jump_cause(prev: Step, step: Step, change: int) -> str:
    if any(c.ok for c in prev.compactions):  # a compaction journaled at step t shapes step t+1's prompt
        return " after a compaction"
    if change > 0 and prev.observations:
        big = max(prev.observations, key=lambda o: len(o.text))
        return f"; step {prev.n}'s {big.tool} output added {len(big.text):,} characters"
    return ""


def reusable_tokens(prev: Step, step: Step) -> int | None:
    """How much of this prompt a prefix cache could have served, in the provider's tokens.

    The harness's ideal prefix reuse when the journal has it (scaled from its own count to
    the provider's); else the whole previous prompt, when the prompt only grew and no
    compaction came between; else None (nothing should have been reusable).
    """
    reported = step.usage.prompt_tokens
    if step.prefix_reused is not None and step.counted_tokens:
        return round(step.prefix_reused / step.counted_tokens * reported)
    if reported >= prev.usage.prompt_tokens and not any(c.ok for c in prev.compactions):
        return prev.usage.prompt_tokens
    return None


def cache_break(steps: list[Step]) -> list[Finding]:
    if not any(s.usage.cached_tokens for s in steps):
        return []  # the provider reports no caching at all: nothing can break
    out = []
    for prev, s in replied_pairs(steps):
        reusable = reusable_tokens(prev, s)
        if (
            reusable is not None
            and reusable >= CACHE_MIN_PREFIX
            and s.usage.cached_tokens < CACHE_EXPECTED_SHARE * reusable
        ):
            now = s.usage.prompt_tokens
            share = s.usage.cached_tokens / now if now else 0.0
            out.append(
                Finding(
                    "cache_break",
                    s.n,
                    f"Only {s.usage.cached_tokens:,} of {now:,} prompt tokens were cached ({share:.0%}), "
                    f"though about {reusable:,} repeated an earlier prompt's prefix.",
                )
            )
    return out


def reasoning_heavy(steps: list[Step]) -> list[Finding]:
    counts = {s.n: reasoning_tokens(s) for s in steps if s.reply is not None}
    if not any(counts.values()):
        return []
    median = statistics.median(counts.values())
    limit = max(REASONING_MIN, REASONING_TIMES_MEDIAN * median)
    return [
        Finding("reasoning_heavy", n, f"{c:,} reasoning tokens in this turn (the run's median is {median:,.0f}).")
        for n, c in counts.items()
        if c >= limit or c > REASONING_ALWAYS
    ]


def failed_program_call(steps: list[Step]) -> list[Finding]:
    """Each call a run_code program made that failed: which one, in the program of which call."""
    out = []
    for s in steps:
        for e in s.inner:
            o = e.observation
            if o.status != "ok":
                number = o.call_id.rsplit(".", 1)[-1]
                out.append(
                    Finding(
                        "failed_program_call",
                        s.n,
                        f"Call {number} ({o.tool}) of the program of {e.parent} failed ({o.status}): {short(o.text)}",
                    )
                )
    return out


DETECTORS: tuple[Detector, ...] = (
    Detector(
        "no_tool_call",
        "Steps with no tool call",
        "The model replied without acting, so the step changed nothing.",
        no_tool_call,
    ),
    Detector(
        "re_read",
        "Re-reads of unchanged content",
        "A read whose every line an earlier read of the same file had already shown; some follow a compaction that "
        "dropped the first read.",
        re_reads,
    ),
    Detector(
        "retry_failed_approach",
        "Retries of a recorded failed approach",
        "A call that failed before and was sent again with nothing written in between, or one the working memory "
        "lists as a failed approach.",
        retried_failed_approaches,
    ),
    Detector(
        "repeated_action",
        "Repeated identical actions",
        "A call with the same tool and arguments as an earlier one got the same result: nothing new was learned.",
        repeated_action,
    ),
    Detector(
        "retry_after_permanent_failure",
        "Retries after a permanent failure",
        "The same call was sent again after an error that cannot change (bad JSON, unknown tool, invalid arguments, refused).",
        retry_after_permanent_failure,
    ),
    Detector(
        "rejected_or_denied",
        "Rejected or denied calls",
        "Calls the dispatch policy rejected or the user refused: the model planned work that never ran.",
        rejected_or_denied,
    ),
    Detector(
        "failed_program_call",
        "Failed calls inside programs",
        "A call that a run_code program made failed: the program's observation said so, and this names the call.",
        failed_program_call,
    ),
    Detector("timeout", "Time-outs", "Tool calls or model calls that ran out of time.", timeouts),
    Detector(
        "truncated_compaction",
        "Cut-off compaction summaries",
        "A compaction whose summary hit its length limit, so the memory that replaced the history is incomplete.",
        truncated_compaction,
    ),
    Detector(
        "context_jump",
        "Context jumps",
        f"The prompt grew or shrank by at least {JUMP_SHARE:.0%} and {JUMP_MIN_TOKENS:,} tokens from one step to the next.",
        context_jump,
    ),
    Detector(
        "cache_break",
        "Cache breaks",
        f"Less than {CACHE_EXPECTED_SHARE:.0%} of a prompt's reusable prefix was served from cache.",
        cache_break,
    ),
    Detector(
        "reasoning_heavy",
        "Reasoning-heavy turns",
        f"Turns with at least {REASONING_TIMES_MEDIAN:g}x the run's median reasoning tokens (and {REASONING_MIN:,}+), "
        f"or over {REASONING_ALWAYS:,}.",
        reasoning_heavy,
    ),
)
BY_NAME = {d.name: d for d in DETECTORS}
# Drift: work that went nowhere. A run's and a batch's drift summary count these, and the tokens spent on them.
DRIFT = ("re_read", "retry_failed_approach", "repeated_action", "no_tool_call", "retry_after_permanent_failure")


def detect(steps: list[Step]) -> list[Finding]:
    """Every detector's findings, in step order (stable within a step)."""
    found = [f for d in DETECTORS for f in d.find(steps)]
    return sorted(found, key=lambda f: f.step)
