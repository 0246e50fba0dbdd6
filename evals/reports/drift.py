"""The drift detectors: work that repeats what the run already had. Pure functions of a run's steps, for our
runs and imported ones alike (evals.reports.actions reads what each call does, whatever its tool is called).

- A **re-read** is a read whose output shows no line an earlier read of the same file had not already shown:
  the content had not changed, and the model had seen it. One that follows a compaction made since the last
  read that showed those lines (ours, an overflow's fold, or the source harness's own) is counted apart: the
  compaction dropped that read from the prompt, and the model went back for it.
- A **retry of a recorded failed approach** is a call sent again after the record said it failed, with nothing
  that could change a file run in between (so the world it ran in was the same): the same call failed earlier
  (a non-zero exit, an error, a time-out), or the working memory a compaction wrote lists it among the failed
  approaches (`failed_approaches`, which compaction never drops), by its command or path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from agent.journal.fold import Step
from core.types import Observation, ToolCall
from evals.reports.actions import may_write, reads
from evals.reports.finding import Finding, call_key, call_tokens, describe, short

# Errors that the same call cannot escape by being sent again: the arguments or the tool
# name are wrong, or the user refused. (A non-zero exit can change once files change.)
PERMANENT_KINDS = {"bad_json", "unknown_tool", "invalid_args", "denied"}
FAILED = ("error", "timeout")  # observation statuses that say the call did not do what was asked
MIN_LINES = 3  # a re-read shows at least this many non-blank lines: an empty or one-line answer is no reading
MIN_ARGUMENT = 8  # a recorded approach names a call by its command or path, if at least this long


def calls_with_results(steps: list[Step]) -> Iterator[tuple[Step, ToolCall, Observation | None]]:
    for s in steps:
        results = {o.call_id: o for o in s.observations}
        for call in s.calls:
            yield s, call, results.get(call.id)


def compacted_after(steps: list[Step]) -> list[int]:
    """The steps after which the prompt was compacted: the next prompt no longer held what came before."""
    out = [s.n for s in steps if any(c.ok for c in s.compactions)]
    out += [s.n - 1 for s in steps if any(o.fold is not None for o in s.overflows)]  # folded before its own call
    return sorted(set(out))


def shown_lines(text: str) -> frozenset[str]:
    return frozenset(line.rstrip() for line in text.splitlines() if line.strip())


def re_reads(steps: list[Step]) -> list[Finding]:
    seen: dict[str, list[tuple[int, frozenset[str]]]] = {}  # path -> (step, lines it showed), in order
    compactions = compacted_after(steps)
    out = []
    for s, call, obs in calls_with_results(steps):
        paths = reads(call)
        if not paths or obs is None or obs.status != "ok":
            continue
        lines = shown_lines(obs.text)
        if len(lines) < MIN_LINES:
            continue
        earlier = [(n, path) for path in paths for n, had in seen.get(path, ()) if n < s.n and lines <= had]
        if earlier:
            last, path = max(earlier)  # the last time the model saw these lines
            since = [c for c in compactions if last <= c < s.n]
            after = f"; a compaction after step {since[-1]} had dropped it from the prompt" if since else ""
            out.append(
                Finding(
                    "re_read",
                    s.n,
                    f"{describe(call)} showed nothing new: step {last}'s read of {path} had shown every line{after}.",
                    call_tokens(s, obs),
                    after_compaction=bool(since),
                )
            )
        for path in paths:
            seen.setdefault(path, []).append((s.n, lines))
    return out


def retried_failed_approaches(steps: list[Step]) -> list[Finding]:
    failed: dict[tuple[str, str], tuple[int, str]] = {}  # call -> (step, how) of its last failure, since no write
    remembered: list[str] = []  # the failed approaches the latest working memory records, since no write
    out = []
    for s in steps:
        results = {o.call_id: o for o in s.observations}
        for call in s.calls:
            obs = results.get(call.id)
            key = call_key(call)
            main = _main_argument(call)
            recorded = next((a for a in remembered if main and main in a), None)
            if key in failed and failed[key][0] < s.n:
                first, how = failed[key]
                why = f"failed at step {first} ({how}) and nothing that could change a file ran since"
            elif recorded is not None:
                why = f"is a failed approach the working memory records: {short(recorded, 60)}"
            else:
                why = ""
            if why:
                out.append(
                    Finding(
                        "retry_failed_approach", s.n, f"{describe(call)} was sent again: it {why}.", call_tokens(s, obs)
                    )
                )
            if may_write(call):  # the world may have changed: an earlier failure says nothing of a retry now
                failed.clear()
                remembered.clear()
            if obs is not None and obs.status in FAILED and obs.error_kind not in PERMANENT_KINDS:
                failed[key] = (s.n, obs.error_kind or obs.status)
        folds = [c.fold for c in s.compactions if c.ok] + [o.fold for o in s.overflows]
        for fold in folds:
            if fold is not None:
                remembered = [f.approach for f in fold.memory.failed_approaches]
    return out


def _main_argument(call: ToolCall) -> str:
    """What names a call in a memory's words: its command, path or pattern (as the extractive summariser
    labels a step), when long enough to be told apart."""
    try:
        args = json.loads(call.arguments)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(args, dict):
        return ""
    main = args.get("command") or args.get("path") or args.get("pattern") or ""
    main = str(main).strip()[:100]
    return main if len(main) >= MIN_ARGUMENT else ""
