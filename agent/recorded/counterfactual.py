"""What a recorded run would have sent and cost under other context policies, beside what it recorded.

Each policy's prompts are rebuilt from the journal (rerender.py: the replies and tool results held fixed)
and priced at the run's model's prices: every rebuilt prompt as input, the part an ideal prefix cache would
serve (the tokens it shares with an earlier request of the run) at the cached-input price, and the step's
recorded completion tokens, reasoning included, at the output price, as recorded: the replies do not change.
A compacting policy's summariser calls are priced the same way: their prompts as input, the part an ideal cache
over every earlier request of the run serves (a summary asked for by forking the agent's prompt shares its
prefix) at the cached price, and the extractive summary's tokens as output.

The recorded policy is rebuilt with the run's own folds, so its prompt sizes should track the prompt tokens
the provider recorded step by step; a different tokenizer scales them. Its summariser calls are not made
again: they cost what their replies recorded. `fit` says by how much and how
closely, and `scale_to_recorded` multiplies every count of ours by that scale, so the counts and costs are
in the source's tokens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter

from agent.journal.fold import Step, fold
from agent.journal.integrity import check_run
from agent.journal.store import RunInfo, read_run_info
from agent.journal.tools import PROGRAM_TOOLS, recorded_tools
from agent.memory_store import recorded_memory
from agent.models.pricing import Price, PriceTable, cost_usd, find_price, named_price
from agent.recorded.engine_cache import CacheEngine, EngineCached, through_engine
from agent.recorded.rerender import Rerendered, StepCost, rerender
from agent.recorded.under_policy import offered_under, opening_under
from agent.tokens import counter_for
from core.context_policy import ContextStep
from core.errors import HarnessError
from core.events import Event, ModelReplied, SummaryReplied
from core.policy import HarnessPolicy
from core.types import Usage
from tools.base import recorded_tool
from tools.builtin import STANDARD

STEPS = TypeAdapter(list[ContextStep])


@dataclass(frozen=True)
class Fit:
    """Our rebuilt prompt sizes against the prompt tokens the provider recorded, over the steps that recorded one."""

    steps: int
    scale: float  # recorded / ours, over those steps' totals: the source's tokens per token of ours
    r2: float | None  # of the recorded counts against ours × scale (1: every step on the line; None: all equal)
    mean_abs_rel_error: float  # |ours × scale − recorded| / recorded, averaged over the steps


def fit(steps: Sequence[StepCost]) -> Fit | None:
    """None when no step recorded its prompt tokens (the source's format kept no usage)."""
    pairs = [(s.prompt_tokens, s.recorded.prompt_tokens) for s in steps if s.recorded.prompt_tokens > 0]
    ours = sum(x for x, _ in pairs)
    if not pairs or not ours:
        return None
    scale = sum(y for _, y in pairs) / ours
    residual = sum((y - scale * x) ** 2 for x, y in pairs)
    mean = sum(y for _, y in pairs) / len(pairs)
    spread = sum((y - mean) ** 2 for _, y in pairs)
    r2 = round(1 - residual / spread, 4) if spread else None
    error = sum(abs(scale * x - y) / y for x, y in pairs) / len(pairs)
    return Fit(len(pairs), round(scale, 4), r2, round(error, 4))


@dataclass(frozen=True)
class StepFigures:
    step: int
    prompt_tokens: int
    reused: int  # served by an ideal prefix cache
    cost_usd: float | None


@dataclass(frozen=True)
class Figures:
    """One policy on one run; token counts in the source's tokens when the run was scaled."""

    policy: str
    recorded: bool  # the run's own policy, with its journaled folds
    steps: list[StepFigures]
    compactions: int
    summariser: Usage
    summariser_cost_usd: float | None
    tool_schema_tokens: int  # per request
    cut_offs: int  # summaries cut off by the summariser's token cap
    engine: EngineCached | None = None  # through the engine's own prefix cache, when asked for

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def reused_tokens(self) -> int:
        return sum(s.reused for s in self.steps)

    @property
    def peak_context(self) -> int:
        return max((s.prompt_tokens for s in self.steps), default=0)

    @property
    def ideal_cached_share(self) -> float | None:
        return round(self.reused_tokens / self.prompt_tokens, 4) if self.prompt_tokens else None

    @property
    def cost_usd(self) -> float | None:
        if self.summariser_cost_usd is None:
            return None
        return sum(s.cost_usd or 0.0 for s in self.steps) + self.summariser_cost_usd


def figures(
    name: str,
    r: Rerendered,
    price: Price | None,
    scale: float = 1.0,
    recorded: bool = False,
    engine: EngineCached | None = None,
) -> Figures:
    def scaled(n: int) -> int:
        return round(n * scale)

    steps = [
        StepFigures(
            s.step,
            scaled(s.prompt_tokens),
            scaled(s.reused),
            cost_usd(
                price,
                Usage(
                    prompt_tokens=scaled(s.prompt_tokens),
                    cached_tokens=scaled(s.reused),
                    completion_tokens=s.recorded.completion_tokens,
                ),
            ),
        )
        for s in r.steps
    ]
    summariser = (
        r.summariser  # the run's own summariser calls, as their replies recorded them: nothing to scale
        if recorded
        else Usage(
            prompt_tokens=scaled(r.summariser.prompt_tokens),
            cached_tokens=scaled(r.summariser_reused),
            completion_tokens=scaled(r.summariser.completion_tokens),
        )
    )
    return Figures(
        policy=name,
        recorded=recorded,
        steps=steps,
        compactions=len(r.folds),
        summariser=summariser,
        summariser_cost_usd=cost_usd(price, summariser),
        tool_schema_tokens=scaled(r.tools_tokens),
        cut_offs=r.cut_offs,
        engine=engine,
    )


@dataclass(frozen=True)
class Recorded:
    """What the run itself recorded (summary.json, or the same figures derived from the journal)."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost_usd: float | None
    unpriced_calls: int
    per_step: dict[int, int]  # step -> the prompt tokens its reply recorded
    calls: dict[int, str] = field(default_factory=dict)  # step -> what its reply called (calls_text)


@dataclass
class Counterfactual:
    run_id: str
    model: str
    tokenizer: str
    tools: str  # whose tool schemas were counted, in words
    price: Price | None
    fit: Fit | None
    scale: float | None  # the scale applied to our counts; None: they are ours, unscaled
    recorded: Recorded
    policies: list[Figures] = field(default_factory=list)  # the recorded policy first
    notes: list[str] = field(default_factory=list)  # what the journal check found


def run_price(info: RunInfo, events: Sequence[Event], prices: PriceTable, price_model: str | None) -> Price | None:
    """An explicit `price_model` (which the table must know); else the run's model string; else a reply's model."""
    if price_model:
        return named_price(price_model, prices)
    models = [info.model, *(e.reply.model for e in events if isinstance(e, ModelReplied) and e.reply.model)]
    return next((p for p in (find_price(m, prices) for m in dict.fromkeys(models)) if p is not None), None)


def counterfactual(
    run_dir: Path,
    others: Sequence[HarnessPolicy],
    prices: PriceTable,
    price_model: str | None = None,
    window: int | None = None,
    scale_to_recorded: bool = False,
    whole_only: bool = False,
    engine: CacheEngine | None = None,
) -> Counterfactual:
    """`window`: the context window the other policies' budgets ("80%") are shares of; default: each policy's
    `model.context_window`, else the one the run recorded. `whole_only`: a journal that lost an event or ends
    torn raises HarnessError (a batch leaves such a run out); else it is rebuilt from its readable events.
    `engine`: also send every policy's requests through the engine's prefix cache (engine_cache.py)."""
    info = read_run_info(run_dir)
    check = check_run(run_dir, info)
    broken = check.damage or check.torn
    if whole_only and broken is not None:
        raise HarnessError(f"{run_dir}: events.jsonl is not whole ({broken.why}), so the run is left out.")
    events = check.events
    counter = counter_for(info.model)
    records = recorded_tools(run_dir)
    tools = [recorded_tool(r) for r in records] if records is not None else list(STANDARD)
    own = rerender(
        events,
        STEPS.validate_python(info.policy.get("context", [])),
        counter,
        tools,
        recorded_folds=True,
        window=info.context_window,
        keep_prompts=engine is not None,
        disclose_over=info.policy.get("mcp_disclose_over_tokens", HarnessPolicy().mcp_disclose_over_tokens),
    )
    # The run's folds are its own, so no summariser is asked again: its summaries cost what they recorded.
    own.summariser = sum((e.reply.usage for e in events if isinstance(e, SummaryReplied) and e.reply), Usage())
    found = fit(own.steps)
    scale = found.scale if scale_to_recorded and found is not None else None
    price = run_price(info, events, prices, price_model)
    s = check.summary
    out = Counterfactual(
        run_id=info.run_id,
        model=info.model,
        tokenizer=counter.name,
        tools=f"the {len(tools)} tools the run offered"
        if records is not None
        else "the standard tool set (this run did not record its tools)",
        price=price,
        fit=found,
        scale=scale,
        recorded=Recorded(
            s.tokens.prompt,
            s.tokens.cached,
            s.tokens.completion,
            s.cost_usd,
            s.unpriced_calls,
            {st.step: st.recorded.prompt_tokens for st in own.steps},
            {step.n: calls_text(step) for step in fold(events).replies},
        ),
        notes=list(check.notes),
    )
    if scale_to_recorded and found is None:
        out.notes.append("no reply recorded its prompt tokens, so the counts are the harness's own, not scaled")

    def measured(r: Rerendered) -> EngineCached | None:
        return through_engine(r, engine) if engine is not None else None

    name = f"{info.policy.get('name', 'recorded')} (recorded)"
    out.policies.append(figures(name, own, price, scale or 1.0, True, measured(own)))
    program = recorded_tools(run_dir, PROGRAM_TOOLS)
    for other in others:
        record = info.memory if other.memory.tool else None
        opening, note = opening_under(other, events, info)
        if note is not None:
            out.notes.append(note)
        r = rerender(
            opening,
            other.context,
            counter,
            offered_under(other, info, tools, [recorded_tool(r) for r in program or ()]),
            window=window or other.model.context_window or info.context_window,
            keep_prompts=engine is not None,
            memory=recorded_memory(run_dir, record, events, other.memory.superseded_shown) if record else None,
            show_memory=record is not None,
            disclose_over=other.mcp_disclose_over_tokens,
        )
        out.policies.append(figures(other.name, r, price, scale or 1.0, engine=measured(r)))
    return out


def calls_text(step: Step) -> str:
    """What a step's reply called, each run_code call with the calls its program made: `run_code [grep, replace ×9]`."""
    parts = []
    for c in step.calls:
        made = Counter(e.observation.tool for e in step.inner if e.parent == c.id)
        inner = ", ".join(f"{tool} ×{n}" if n > 1 else tool for tool, n in made.items())
        parts.append(f"{c.name} [{inner}]" if inner else c.name)
    return ", ".join(parts)


def price_json(price: Price | None) -> dict | None:
    if price is None:
        return None
    return {
        "model": f"{price.provider}:{price.model}",
        "input_per_million": price.input,
        "cached_input_per_million": round(price.input * price.cached_input, 6),
        "output_per_million": price.output,
    }


def figures_json(f: Figures) -> dict:
    return {
        "policy": f.policy,
        "recorded": f.recorded,
        "steps": len(f.steps),
        "prompt_tokens": f.prompt_tokens,
        "ideal_cached_tokens": f.reused_tokens,
        "ideal_cached_share": f.ideal_cached_share,
        "peak_context": f.peak_context,
        "compactions": f.compactions,
        "summariser_tokens": f.summariser.prompt_tokens + f.summariser.completion_tokens,
        "summariser_cost_usd": f.summariser_cost_usd,
        "tool_schema_tokens_per_request": f.tool_schema_tokens,
        "cost_usd": f.cost_usd,
        "engine_cached_share": f.engine.share if f.engine else None,
        "engine_cached_share_all_requests": f.engine.share_all if f.engine else None,
    }


def to_json(c: Counterfactual, per_step: bool = False) -> dict:
    out = {
        "run_id": c.run_id,
        "model": c.model,
        "tokenizer": c.tokenizer,
        "tools": c.tools,
        "price": price_json(c.price),
        "scaled_to_recorded": c.scale,
        "fit": None if c.fit is None else vars(c.fit),
        "recorded": {k: v for k, v in vars(c.recorded).items() if k not in ("per_step", "calls")},
        "policies": [figures_json(f) for f in c.policies],
        "notes": c.notes,
    }
    if per_step:
        out["per_step"] = [
            {
                "step": row[0].step,
                "recorded_prompt_tokens": c.recorded.per_step.get(row[0].step, 0),
                "calls": c.recorded.calls.get(row[0].step, ""),
                "policies": [
                    {
                        "policy": f.policy,
                        "prompt_tokens": s.prompt_tokens,
                        "ideal_cached_tokens": s.reused,
                        "cost_usd": s.cost_usd,
                    }
                    for f, s in zip(c.policies, row, strict=True)
                ],
            }
            for row in zip(*[f.steps for f in c.policies], strict=True)
        ]
    return out
