"""What each step's prompt was made of: system, task and notes, replies, reasoning,
observations, compaction summaries, and tool schemas with message framing.

The journal records each prompt's size, not its parts, so the parts are estimated:
the history is rebuilt from the journal, measured in characters (four to a token),
reconciled with the rendered prompt's size the journal did record, and scaled to the
prompt tokens the provider reported; what is left of the reported count is tool
schemas and framing. Reports say so beside the chart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.types import Message
from evals.reports.steps import Step

PARTS = ("system", "task", "replies", "reasoning", "observations", "summaries", "schemas")
PART_LABELS = {
    "system": "system prompt",
    "task": "task & harness notes",
    "replies": "model replies & calls",
    "reasoning": "reasoning resent",
    "observations": "tool observations",
    "summaries": "compaction summaries",
    "schemas": "tool schemas & framing",
}
CHARS_PER_TOKEN = 4
METHOD = (
    "Parts are estimated from characters (4 per token) of the history rebuilt from the journal, "
    "reconciled with the rendered prompt size the journal records, and scaled to the provider's "
    "prompt token count; what remains of that count is attributed to tool schemas and message framing."
)


@dataclass(frozen=True)
class Breakdown:
    step: int
    tokens: dict[str, int]  # part -> estimated tokens
    reported: int  # the provider's prompt tokens, 0 when none was reported

    @property
    def total(self) -> int:
        return sum(self.tokens.values())


def reasoning_kept(policy: dict[str, Any]) -> str:
    """How much past reasoning the run's context policy resends: none, last_turn or all."""
    for step in policy.get("context") or []:
        if isinstance(step, dict) and step.get("kind") == "strip_reasoning":
            return str(step.get("keep", "last_turn"))
    return "all"


def breakdowns(opening: list[Message], steps: list[Step], policy: dict[str, Any]) -> list[Breakdown]:
    keep = reasoning_kept(policy)
    head = dict.fromkeys(PARTS, 0)
    for message in opening:
        head["system" if message.role == "system" else "task"] += len(message.text)
    # Each step's own contribution to later prompts, so a compaction can drop exactly the steps it folded.
    own: dict[int, dict[str, int]] = {}
    live = {"replies": 0, "calls": 0, "reasoning": 0, "observations": 0, "task": 0}  # sums over unfolded steps
    summaries = 0
    folded_upto = 0
    last_reasoning = 0
    out = []
    for s in steps:
        if s.reply is not None:
            sent = {
                **head,
                "replies": live["replies"],
                "calls": live["calls"],
                "observations": live["observations"],
                "task": head["task"] + live["task"],
                "summaries": summaries,
            }
            sent["reasoning"] = {"none": 0, "last_turn": last_reasoning}.get(keep, live["reasoning"])
            _reconcile(sent, s.prompt_chars)
            out.append(_to_tokens(s.n, sent, s.usage.prompt_tokens))
        m = s.reply.message if s.reply is not None else None
        last_reasoning = len(m.reasoning.text) if m is not None and m.reasoning else 0
        mine = {
            "replies": len(m.text) if m is not None else 0,
            "calls": sum(len(c.name) + len(c.arguments) for c in m.tool_calls) if m is not None else 0,
            "reasoning": last_reasoning,
            "observations": sum(len(o.text) for o in s.observations),
            "task": sum(len(n.text) for n in s.notes),
        }
        own[s.n] = mine
        for k, v in mine.items():
            live[k] += v
        for c in s.compactions:
            if not c.ok:
                continue
            first, last = (c.fold.first_step, c.fold.last_step) if c.fold else (folded_upto + 1, s.n)
            for n in range(max(first, folded_upto + 1), last + 1):
                for k, v in own.pop(n, {}).items():
                    live[k] -= v
            folded_upto = max(folded_upto, last)
            text = c.fold.text if c.fold else ""
            summaries = len(text) if c.fold is None or c.fold.restart else summaries + len(text)
    return out


def _reconcile(sent: dict[str, int], prompt_chars: int) -> None:
    """Text the context policy removed (masking) comes off observations first, then replies."""
    text = sum(v for k, v in sent.items() if k not in ("reasoning", "schemas", "calls"))
    removed = text - prompt_chars if prompt_chars else 0
    for part in ("observations", "replies"):
        if removed <= 0:
            break
        take = min(removed, sent[part])
        sent[part] -= take
        removed -= take


def _to_tokens(step: int, chars: dict[str, int], reported: int) -> Breakdown:
    chars = dict(chars)
    chars["replies"] += chars.pop("calls")
    tokens = {k: (v + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN for k, v in chars.items()}
    estimated = sum(tokens.values())
    if reported and estimated > reported:
        scale = reported / estimated
        tokens = {k: int(v * scale) for k, v in tokens.items()}
    if reported:
        tokens["schemas"] = max(0, reported - sum(tokens.values()))
    return Breakdown(step, tokens, reported)
