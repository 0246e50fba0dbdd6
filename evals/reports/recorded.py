"""An imported run's own numbers, as its source recorded them: each reply's cost summed, the source's own total
for the run, the prompt tokens and the provider's cached share. Reports and A/B tables show them beside the
harness's figures (a cost repriced from the price table, the ideal prefix reuse), each named as whose it is,
so a recorded figure is never read as ours nor an unknown one as zero."""

from __future__ import annotations

from dataclasses import dataclass

from agent.journal.fold import Step
from agent.journal.store import RunInfo
from agent.journal.summary import Summary
from agent.models.pricing import Price, format_usd

# Formats another tool writes from a harness's run (Harbor converts mini-swe-agent's and SWE-agent's runs to ATIF):
# their figures are named as the harness's, read through that format.
CONVERSIONS = {"atif": "ATIF"}
# The total each format writes for a whole run: mini-swe-agent's and SWE-agent's info.model_stats.instance_cost,
# ATIF's final_metrics.total_cost_usd, Inspect's model_usage total_cost (run.json imported.recorded keeps them).
OWN_TOTALS = ("instance_cost", "total_cost_usd", "total_cost")
OWN_PROMPT_TOTALS = ("tokens_sent", "total_prompt_tokens")  # SWE-agent's, ATIF's: the run's prompt tokens


@dataclass(frozen=True)
class Recorded:
    by: str  # whose figures: the source harness, and the format it was read from where that is another's
    replies: int
    replies_costed: int  # replies whose cost the source recorded
    replies_cost_usd: float | None  # those costs summed; None when no reply has one
    own_total_usd: float | None  # the run's total as the source wrote it down; None when it wrote none
    prompt_tokens: int
    cached_tokens: int
    replies_with_usage: int = 0  # replies whose usage the source recorded (the others' read as zeros)
    own_prompt_tokens: int | None = None  # the run's prompt tokens as the source totalled them

    @property
    def label(self) -> str:
        return f"recorded by {self.by}"

    @property
    def cost_usd(self) -> float | None:
        """The run's recorded cost as one figure: every reply's cost summed, else the source's own total."""
        if self.replies and self.replies_cost_usd is not None and self.replies_costed == self.replies:
            return self.replies_cost_usd
        return self.own_total_usd

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    @property
    def tokens_text(self) -> str:
        """The recorded prompt tokens as shown: per reply where recorded, else the source's own total."""
        own = f"its own total {self.own_prompt_tokens:,}" if self.own_prompt_tokens is not None else ""
        if not self.replies_with_usage:
            return "not recorded per reply" + (f" ({own})" if own else "")
        some = f"{self.replies_with_usage} of {self.replies} replies" if self.replies_with_usage < self.replies else ""
        said = "; ".join(x for x in (some, own) if x)
        return f"{self.prompt_tokens:,}" + (f" ({said})" if said else "")


def recorded(info: RunInfo, summary: Summary, steps: list[Step]) -> Recorded | None:
    """The source's figures of an imported run (None for a run of ours). The journal of an import keeps each
    reply's recorded usage and cost (`cost_usd`, null where the source recorded none), so the summary's
    tokens and cost are the source's own; run.json's `imported.recorded` holds the run's total."""
    source = info.imported
    if not source:
        return None
    agent, fmt = str(source.get("agent") or "the source"), str(source.get("format") or "")
    totals = source.get("recorded") or {}
    own = next((totals[k] for k in OWN_TOTALS if _number(totals.get(k))), None)
    own_prompt = next((totals[k] for k in OWN_PROMPT_TOTALS if _number(totals.get(k))), None)
    return Recorded(
        by=f"{agent} (read from {CONVERSIONS[fmt]})" if fmt in CONVERSIONS else agent,
        replies=summary.model_calls,
        replies_costed=summary.model_calls - summary.unpriced_calls,
        replies_cost_usd=summary.cost_usd,
        own_total_usd=float(own) if own is not None else None,
        prompt_tokens=summary.tokens.prompt,
        cached_tokens=summary.tokens.cached,
        replies_with_usage=sum(s.reply is not None and priceable(info, s) for s in steps),
        own_prompt_tokens=int(own_prompt) if own_prompt is not None else None,
    )


def priceable(info: RunInfo, step: Step) -> bool:
    """False for an imported run's reply whose source recorded no usage (its journal holds zeros there): the price
    table cannot price it, so the run's repriced cost is unknown, never the zero that usage reads as."""
    return not (info.imported and step.reply is not None and not step.usage.prompt_tokens)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class CostTotal:
    """A batch's cost: each run at the price table's price, else at the cost its source recorded."""

    usd: float | None  # None when some run has neither: never a partial sum shown as the whole
    priced: int
    recorded: int
    unknown: int
    sources: tuple[str, ...] = ()  # who recorded the costs counted as recorded
    imported: bool = False  # some run was imported, so a recorded cost could have stood in

    @property
    def label(self) -> str:
        if self.unknown:
            return f"{self.unknown} runs have no price" + (" and no recorded cost" if self.imported else "")
        if not self.recorded:
            return "total, priced from the table"
        by = ", ".join(self.sources)
        if not self.priced:
            return f"total as recorded by {by}"
        return f"total: {self.priced} runs priced from the table, {self.recorded} as recorded by {by}"


def cost_total(runs: list[tuple[float | None, Recorded | None]]) -> CostTotal:
    """Each run's (cost from the price table, source's figures) into one total, saying which cost each gave."""
    priced = [c for c, _ in runs if c is not None]
    kept = [r for c, r in runs if c is None and r is not None and r.cost_usd is not None]
    unknown = len(runs) - len(priced) - len(kept)
    usd = sum(priced) + sum(r.cost_usd or 0.0 for r in kept) if not unknown else None
    sources = tuple(dict.fromkeys(r.by for r in kept))
    return CostTotal(usd, len(priced), len(kept), unknown, sources, any(r is not None for _, r in runs))


def recorded_cost_text(r: Recorded) -> tuple[str, str]:
    """(the recorded cost as shown, where it comes from): the replies' costs summed and the source's own total."""
    own = f"its own total {format_usd(r.own_total_usd)}" if r.own_total_usd is not None else ""
    if r.replies and r.replies_cost_usd is not None and r.replies_costed == r.replies:
        return format_usd(r.replies_cost_usd), "; ".join(x for x in (f"{r.replies} replies' costs summed", own) if x)
    partial = (
        f"{r.replies_costed} of {r.replies} replies have a cost ({format_usd(r.replies_cost_usd)})"
        if r.replies_cost_usd is not None and r.replies_costed
        else "no reply has a cost"
    )
    if r.own_total_usd is not None:
        return format_usd(r.own_total_usd), f"its own total; {partial}"
    if r.replies_cost_usd is not None and r.replies_costed:
        return f"at least {format_usd(r.replies_cost_usd)}", partial
    return format_usd(None), "the source recorded no cost"


def repriced_text(price: Price | None, cost: float | None, model: str) -> str:
    """How an imported run's cost was priced from the table, or why it could not be."""
    if price is None:
        return f"no price for {model} in the table"
    if cost is None:
        return "some replies have no recorded usage to price"
    return f"priced from the table as {price.model}"
