"""What each context policy costs a real prefix cache, on recorded trajectories.

For every trajectory in tests/fixtures/trajectories and every policy below, the
prompts the run would have sent are rebuilt from the journal (`agent.recorded.rerender`:
replies and tool results held fixed), rendered with the default model's chat
template and tokenizer, and sent in order to the local engine for prefill (one
token generated, then discarded). The engine's radix prefix cache reports how
many prompt tokens it served; the harness's own radix tree gives the ideal.
Summariser requests (compaction) are sent too, in their place in the run.

Policies: append_only; masked (last 5 tool outputs verbatim); masked_batched (the
mask boundary moves 10 outputs at a time); naive compaction
(a fresh summary prompt, the memory rewritten after the task, 4 recent steps
kept); append compaction (the summary asked for by appending to the agent's own
prompt, memory notes appended, 1 recent step kept); cache-aware compaction (as
append, with the earliest steps, up to 70% of the trigger's tokens, kept verbatim
ahead of the notes, and every later step folded: each fold then rewrites only
what follows a long stable prefix). The compactions fold when the prompt reaches
`--trigger-fraction` of the trajectory's append-only peak, so they work to the
same context budget.
Summaries come from the extractive summariser (no model), so a summary's
tokens are those a model would have been sent and would have returned.

The engine runs the default model's tokenizer, block size and radix cache, but
random weights of a one-layer shape with a 256k-token position table: which
prompt tokens a prefix cache serves depends only on the token ids, the block
size and the cache's capacity, never on the weights, and SmolLM2's own 8k
window cannot hold the append-only prompts (up to ~60k tokens). `--weights
default` uses SmolLM2 itself and stops at its window.

    .venv/bin/python benchmarks/bench_context.py [--trigger-fraction 0.385] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.journal.store import read_events  # noqa: E402
from agent.recorded.engine_cache import cache_engine  # noqa: E402
from agent.recorded.rerender import rerender  # noqa: E402
from core.context_policy import Compact, ContextStep, MaskObservations, StripReasoning  # noqa: E402
from core.types import Message  # noqa: E402
from memory.prefix import PrefixReuse  # noqa: E402
from memory.tokens import TokenCounter  # noqa: E402
from tools.base import openai_schema  # noqa: E402
from tools.builtin import STANDARD  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "trajectories"


@dataclass
class Row:
    trajectory: str
    policy: str
    requests: int
    prompt_tokens: int  # agent requests
    cached_share: float  # engine-reported, agent requests
    ideal_reuse: float  # harness radix, agent requests
    peak_context: int
    summariser_prompt: int
    summariser_completion: int
    summariser_cached_share: float | None
    all_cached_share: float  # engine-reported, agent and summariser requests together
    seconds: float


def policies(trigger: int) -> dict[str, list[ContextStep]]:
    return {
        "append_only": [],
        "masked": [StripReasoning(keep="last_turn"), MaskObservations(keep_last=5)],
        "masked_batched": [StripReasoning(keep="all"), MaskObservations(keep_last=5, every=10)],
        "compact_naive": [
            Compact(trigger_tokens=trigger, keep_recent_steps=4, layout="rewrite", summariser_prompt="fresh")
        ],
        "compact_append": [
            Compact(trigger_tokens=trigger, keep_recent_steps=1, layout="append", summariser_prompt="fork")
        ],
        "compact_cache_aware": [
            Compact(
                trigger_tokens=trigger,
                keep_first_tokens=int(trigger * 0.7),
                keep_recent_steps=0,
                layout="append",
                summariser_prompt="fork",
            )
        ],
    }


def chat_dicts(messages: list[Message]) -> list[dict]:
    out = []
    for m in messages:
        d: dict = {"role": m.role, "content": m.text}
        if m.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        if m.role == "tool":
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def replay(name: str, events, steps: list[ContextStep], policy: str, engine, tokenizer, counter: TokenCounter) -> Row:
    from engine.sampler import SamplingParams

    start = time.perf_counter()
    r = rerender(events, steps, counter, STANDARD, keep_prompts=True)
    ideal = PrefixReuse()
    once = SamplingParams(temperature=0, max_tokens=1)
    sent = {"agent": [0, 0], "summariser": [0, 0]}  # prompt tokens, cached tokens
    peak = 0
    for req in r.requests:
        tools = [openai_schema(t) for t in req.tools] or None
        ids = tokenizer.encode_chat(chat_dicts(req.messages), tools)
        out = engine.generate([ids], once)[0]
        sent[req.kind][0] += out.usage.prompt_tokens
        sent[req.kind][1] += out.usage.cached_tokens
        if req.kind == "agent":
            ideal.add(ids)
            peak = max(peak, len(ids))
    agent, summ = sent["agent"], sent["summariser"]
    return Row(
        trajectory=name,
        policy=policy,
        requests=len(r.requests),
        prompt_tokens=agent[0],
        cached_share=round(agent[1] / agent[0], 4),
        ideal_reuse=ideal.rate or 0.0,
        peak_context=peak,
        summariser_prompt=summ[0],
        summariser_completion=r.summariser.completion_tokens,
        summariser_cached_share=round(summ[1] / summ[0], 4) if summ[0] else None,
        all_cached_share=round((agent[1] + summ[1]) / (agent[0] + summ[0]), 4),
        seconds=round(time.perf_counter() - start, 1),
    )


def table(rows: list[Row]) -> str:
    head = (
        "trajectory",
        "policy",
        "prompt tokens",
        "cached (engine)",
        "ideal reuse",
        "peak context",
        "peak / append",
        "summariser tokens",
        "cached incl. summariser",
    )
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    peaks = {r.trajectory: r.peak_context for r in rows if r.policy == "append_only"}
    for r in rows:
        summ = f"{r.summariser_prompt:,} + {r.summariser_completion:,}" if r.summariser_prompt else "0"
        lines.append(
            " | ".join(
                [
                    r.trajectory,
                    r.policy,
                    f"{r.prompt_tokens:,}",
                    f"{r.cached_share:.1%}",
                    f"{r.ideal_reuse:.1%}",
                    f"{r.peak_context:,}",
                    f"{r.peak_context / peaks[r.trajectory]:.1%}" if r.trajectory in peaks else "-",
                    summ,
                    f"{r.all_cached_share:.1%}",
                ]
            )
        )
    return "\n".join(lines)


# The share of append-only's peak at which the compacting policies fold (trace_prompts.py uses it too).
TRIGGER_FRACTION = 0.385


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", type=Path, default=FIXTURES)
    ap.add_argument(
        "--trigger-fraction",
        type=float,
        default=TRIGGER_FRACTION,
        help="compactions fold when the prompt reaches this share of append-only's peak",
    )
    ap.add_argument("--weights", choices=["dummy", "default"], default="dummy")
    ap.add_argument("--only", nargs="*", help="policy names to run (default: all)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()

    engine = cache_engine(args.weights)  # the same engine `harness rerender --engine` sends prompts to
    new_engine, tokenizer = engine.new, engine.tokenizer
    counter = TokenCounter(tokenizer.encode, "engine")
    rows: list[Row] = []
    for run_dir in sorted(p for p in args.fixtures.iterdir() if (p / "events.jsonl").exists()):
        events = read_events(run_dir)
        base_peak = rerender(events, [], counter, STANDARD).peak
        for policy, steps in policies(int(base_peak * args.trigger_fraction)).items():
            if args.only and policy not in args.only:
                continue
            engine = new_engine()  # a cold cache per run, as a fresh server would have
            try:
                rows.append(replay(run_dir.name, events, steps, policy, engine, tokenizer, counter))
            finally:
                engine.shutdown()
            print(f"  {run_dir.name} / {policy}: {rows[-1].seconds} s", file=sys.stderr, flush=True)
    print("Replies and tool results held fixed (recorded); prompts rebuilt per policy and prefilled by the engine.")
    print(
        f"Compactions fold at {args.trigger_fraction:.1%} of each trajectory's append-only peak; extractive summariser."
    )
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    main()
