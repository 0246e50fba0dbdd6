"""The step-by-step timeline a report shows, with long texts clipped and linked, not inlined.

A report must stay small for long runs, so any text over INLINE_CHARS is shown as its head
and tail, and the whole text is linked: the journal's own artifact for output the harness
truncated, else a copy the report writes under `artifacts/report/` beside report.html (in the
run directory, unless the report is written elsewhere).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from agent.models.pricing import format_usd
from core.events import Compacted, InnerObserved
from evals.reports.breakdown import Breakdown
from evals.reports.detectors import cut_off_note, prompt_tokens, reasoning_tokens
from evals.reports.finding import Finding
from evals.reports.steps import Step, cut_off, lost, memory_text

INLINE_CHARS = 1500  # shown head + tail of any one text
TAIL_CHARS = 300
DIFF_LINES = 400  # a memory diff longer than this is clipped (the full memory is linked)
REPORT_ARTIFACTS = Path("artifacts") / "report"


@dataclass
class Text:
    shown: str
    clipped: bool = False
    chars: int = 0
    link: str | None = None  # relative to the report


@dataclass
class ObservationView:
    call_id: str
    tool: str
    status: str
    error_kind: str | None
    text: Text
    exit_code: int | None
    duration_s: float
    harness_cut: str | None  # how the harness truncated the output before the model saw it
    full_output: str | None  # the journal's artifact with the untruncated output


@dataclass
class CallView:
    id: str
    name: str
    arguments: Text
    observation: ObservationView | None  # None: the run stopped before the call ran
    inner: list[CallView] = field(default_factory=list)  # the calls its program made (run_code), in order


@dataclass
class CompactionView:
    ok: bool
    cut_note: str | None  # what a cut-off summariser did, when it was cut off
    message: str
    tokens_before: int | None
    tokens_after: int | None
    truncated: bool
    finish_reason: str | None
    diff: list[tuple[str, str]]  # (kind: add | del | hunk | same, line)
    diff_clipped: bool
    memory: Text


@dataclass
class StepView:
    n: int
    findings: list[Finding]
    prompt_tokens: int
    estimated: bool
    cached_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost: str
    latency_s: float
    finish_reason: str
    text: Text | None
    reasoning: Text | None
    calls: list[CallView]
    orphans: list[ObservationView]  # observations without a call in this step's reply
    failures: list[str]
    notes: list[Text]
    compactions: list[CompactionView]
    lost: list[str]  # what each overflow recovery of the step dropped
    parts: list[tuple[str, float, int]] = field(default_factory=list)  # (part, share, tokens)

    @property
    def detectors(self) -> list[str]:
        return sorted({f.detector for f in self.findings})


class Clipper:
    """Clips texts, writing the whole of each clipped text once under artifacts/report/ beside the report."""

    def __init__(self, run_dir: Path, report_dir: Path):
        self.run_dir = run_dir
        self.report_dir = report_dir
        self.written = 0
        shutil.rmtree(report_dir / REPORT_ARTIFACTS, ignore_errors=True)  # texts of an older report

    def in_run(self, path: str) -> str:
        """A link from the report to a file of the run directory (`path` relative to it)."""
        return Path(os.path.relpath(self.run_dir / path, self.report_dir)).as_posix()

    def __call__(self, text: str, name: str, link: str | None = None) -> Text:
        if len(text) <= INLINE_CHARS:
            return Text(text, False, len(text))
        head = text[: INLINE_CHARS - TAIL_CHARS]
        tail = text[-TAIL_CHARS:]
        cut = len(text) - len(head) - len(tail)
        shown = f"{head}\n… {cut:,} characters not shown here …\n{tail}"
        if link is None:
            path = REPORT_ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".txt")
            (self.report_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (self.report_dir / path).write_text(text, encoding="utf-8", errors="replace")
            self.written += 1
            link = path.as_posix()
        return Text(shown, True, len(text), link)


def pretty_arguments(raw: str) -> str:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    if isinstance(value, dict) and all(isinstance(v, str | int | float | bool) or v is None for v in value.values()):
        # one line per argument reads better than JSON with escaped newlines
        return "\n".join(f"{k}: {v}" if "\n" not in str(v) else f"{k}:\n{v}" for k, v in value.items())
    return json.dumps(value, indent=2, ensure_ascii=False)


def memory_diff(before: str, after: str) -> tuple[list[tuple[str, str]], bool]:
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "same"
        )
        lines.append((kind, line))
    return lines[:DIFF_LINES], len(lines) > DIFF_LINES


def step_views(
    steps: list[Step], findings: list[Finding], costs: list[float | None], parts: list[Breakdown], clip: Clipper
) -> list[StepView]:
    by_step: dict[int, list[Finding]] = {}
    for f in findings:
        by_step.setdefault(f.step, []).append(f)
    parts_by_step = {b.step: b for b in parts}
    memory = ""
    views = []
    for s, cost in zip(steps, costs):
        reply = s.reply
        comps = []
        for c in s.compactions:
            comps.append(_compaction_view(c, memory, s.n, clip))
            memory = memory_text(c)
        message = reply.message if reply else None
        observed = {o.call_id: _observation_view(o, s.n, clip) for o in s.observations}
        views.append(
            StepView(
                n=s.n,
                findings=by_step.get(s.n, []),
                prompt_tokens=prompt_tokens(s),
                estimated=bool(reply) and not s.usage.prompt_tokens,
                cached_tokens=s.usage.cached_tokens,
                completion_tokens=s.usage.completion_tokens,
                reasoning_tokens=reasoning_tokens(s),
                cost=format_usd(cost) if reply else "",
                latency_s=reply.latency_s if reply else 0.0,
                finish_reason=reply.finish_reason if reply else "",
                text=clip(message.text, f"step{s.n:05d}-reply") if message and message.text else None,
                reasoning=clip(message.reasoning.text, f"step{s.n:05d}-reasoning")
                if message and message.reasoning and message.reasoning.text
                else None,
                calls=[
                    CallView(
                        c.id,
                        c.name,
                        clip(pretty_arguments(c.arguments), f"step{s.n:05d}-{c.id}-arguments"),
                        observed.pop(c.id, None),
                        [_inner_view(e, s.n, clip) for e in s.inner if e.parent == c.id],
                    )
                    for c in s.calls
                ],
                orphans=list(observed.values()),
                failures=[("transient: " if f.transient else "permanent: ") + f.message for f in s.failures],
                notes=[clip(n.text, f"step{s.n:05d}-note{i}") for i, n in enumerate(s.notes)],
                compactions=comps,
                lost=[lost(o) for o in s.overflows],
                parts=_shares(parts_by_step.get(s.n)),
            )
        )
    return views


def _inner_view(e: InnerObserved, n: int, clip: Clipper) -> CallView:
    o = e.observation
    arguments = clip(pretty_arguments(e.arguments), f"step{n:05d}-{o.call_id}-arguments")
    return CallView(o.call_id, o.tool, arguments, _observation_view(o, n, clip))


def _observation_view(o, n: int, clip: Clipper) -> ObservationView:
    cut = o.truncation
    harness_cut = None
    if cut is not None:
        harness_cut = (
            f"The harness showed the model {cut.kept_chars:,} of {cut.original_chars:,} characters (head and tail)."
        )
    return ObservationView(
        call_id=o.call_id,
        tool=o.tool,
        status=o.status,
        error_kind=o.error_kind,
        text=clip(o.text, f"step{n:05d}-{o.call_id}-observation"),
        exit_code=o.exit_code,
        duration_s=o.duration_s,
        harness_cut=harness_cut,
        full_output=clip.in_run(cut.artifact) if cut is not None else None,
    )


def _compaction_view(c: Compacted, previous: str, n: int, clip: Clipper) -> CompactionView:
    memory, cut = memory_text(c), cut_off(c)
    diff, clipped = memory_diff(previous, memory)
    return CompactionView(
        c.ok,
        cut_off_note(c) if cut else None,
        c.message,
        c.tokens_before,
        c.tokens_after,
        cut,
        c.finish_reason or None,
        diff,
        clipped,
        clip(memory, f"step{n:05d}-memory-{c.seq}"),
    )


def _shares(b: Breakdown | None) -> list[tuple[str, float, int]]:
    if b is None or not b.total:
        return []
    return [(part, tokens / b.total, tokens) for part, tokens in b.tokens.items() if tokens]
