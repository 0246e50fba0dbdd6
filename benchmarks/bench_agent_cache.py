"""Agents coming back: the prefix cache with return hints against plain LRU, on replayed agent traces.

Each agent replays one recorded trajectory's prompts (`benchmarks/data/trace_prompts.json.gz`, the
append-only policy, as far as `--max-prompt` tokens) through the engine, one request at a time; between
two requests it sleeps for a tool delay drawn from the published mini-swe-agent runs of Gemini 3 Pro on
SWE-bench Verified (the time between two replies of one run, as their `created` stamps record it, so tool
time plus the model's own). `--copies` agents replay each trajectory, each with its own marker block after
the system prompt and tools that all share, so that no two agents share more than real agents would.
Every agent draws its delays from its own seeded stream, the same in both modes.

The KV cache holds `--budget` (default half) of the working set: the sum of every agent's largest prompt.
Whether that forces eviction depends on the engine's speed: where the engine is the bottleneck (this
CPU), requests queue and every agent reaches its largest prompts at about the same time; where it is
not (a GPU between tool calls), the heavy-tailed delays spread the agents out and those in flight hold
far less at once. Each run measures that peak live set (each agent's latest prompt from its first
request to its last, the shared head once) and prints the budget against it. Both modes run at once, each in its own process with its own engine and one thread, so that the load of
this shared machine falls on both alike:

- `lru`: requests carry no hint; the cache evicts least recently used blocks;
- `held`: every request carries its agent's session and `--tool-timeout` as a `ReturnHint`, as the
  harness sends them (`X-Harness-Session`, `X-Harness-Return-Within`).

Printed per mode: the cached share of prompt tokens, job completion time (an agent's first request to
its last reply, tool delays included) at p50 and p90, the model's time per agent (its requests'
latencies summed), and the cache's evictions; then the differences.

    .venv/bin/python benchmarks/bench_agent_cache.py [--copies 4] [--budget 0.5] [--json OUT]
    .venv/bin/python benchmarks/bench_agent_cache.py --idle     # no model: an engine never the bottleneck

`--idle` replays the same delay draws through the engine's radix cache alone, each request served as
it arrives, at budgets from all of the working set to an eighth, in seconds: what the cache does on
an engine that is never busy. A GPU run puts its engine under the CPU's load by shrinking the delays
and hints (`--time-scale`) and the agents' stagger (`--stagger`).

The engine runs dummy weights of SmolLM2-135M's shape cut to `--layers` layers (which blocks are cached
depends only on token ids and timing; fewer layers let a 2-core machine replay the traces in minutes);
`--layers 30` is the full depth. Delays come from a bare git mirror of gruckion/mini-swe-agent (`--mirror`),
a folder of `.traj.json` files (`--runs`), or a JSON list written earlier by `--save-delays` (`--delays`).
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from trace_prompts import DEFAULT_PATH, load  # noqa: E402

MIRROR = Path("/work/.mirror/gruckion+mini-swe-agent/repo")
BLOCK = 16
MODES = ("lru", "held")


# ------------------------------------------------------------------ inputs


def reply_gaps(runs: list[Path]) -> list[float]:
    """Seconds between consecutive replies of each mini-swe-agent run (OpenRouter's `created` stamps)."""
    gaps: list[float] = []
    for path in runs:
        messages = json.loads(path.read_text()).get("messages", [])
        stamps = [
            m["extra"]["response"]["created"]
            for m in messages
            if m.get("role") == "assistant" and isinstance(m.get("extra"), dict) and "response" in m["extra"]
        ]
        gaps += [float(b - a) for a, b in zip(stamps, stamps[1:]) if b >= a]
    return gaps


def load_delays(args) -> list[float]:
    if args.delays is not None:
        return json.loads(args.delays.read_text())
    if args.runs is not None:
        return reply_gaps(sorted(args.runs.rglob("*.traj.json")))
    if not args.mirror.exists():
        sys.exit(f"no published runs at {args.mirror}: pass --mirror, --runs DIR or --delays FILE")
    from bench_import import extract

    with tempfile.TemporaryDirectory() as tmp:
        return reply_gaps(extract(args.mirror, Path(tmp), 500))


def agent_prompts(max_prompt: int, copies: int) -> dict[str, list[list[int]]]:
    """Each agent's prompts: its trajectory's append-only requests up to `max_prompt` tokens, with the
    agent's own marker block after the head every trajectory shares (`shared_blocks` of them)."""
    traces = {name: [ids for _, ids in pols["append_only"]] for name, pols in load(DEFAULT_PATH).items()}
    firsts = [reqs[0] for reqs in traces.values()]
    head = min(next((i for i, (a, b) in enumerate(zip(firsts[0], f)) if a != b), len(f)) for f in firsts[1:])
    head -= head % BLOCK
    agents = {}
    for name, reqs in sorted(traces.items()):
        kept = [ids for ids in reqs[: next((i for i, r in enumerate(reqs) if len(r) > max_prompt), len(reqs))]]
        for c in range(copies):
            marker = [2 + (len(agents) * 131 + j * 17) % 40000 for j in range(BLOCK)]
            agents[f"{name}#{c}"] = [ids[:head] + marker + ids[head:] for ids in kept]
    return agents


def shared_blocks(agents: dict[str, list[list[int]]]) -> int:
    """Blocks at the head of every agent's prompts: the head they share, cached once for all."""
    prompts = [p[0] for p in agents.values()]
    n = min(len(p) for p in prompts) // BLOCK
    return next((i for i in range(n) if len({tuple(p[i * BLOCK : (i + 1) * BLOCK]) for p in prompts}) > 1), n)


class LiveSet:
    """The blocks the agents in flight would have cached at once: each agent's latest prompt, from its
    first request until its last, the shared head counted once. Its peak is the cache that would lose
    nothing but first sight; a KV budget under it forces eviction."""

    def __init__(self, shared: int):
        self.shared, self.agents, self.peak = shared, {}, 0
        self.lock = threading.Lock()

    def update(self, name: str, tokens: int) -> None:
        with self.lock:
            self.agents[name] = max(0, tokens // BLOCK - self.shared)
            self.peak = max(self.peak, self.shared + sum(self.agents.values()))


def working_set_blocks(agents: dict[str, list[list[int]]]) -> int:
    """The working set: every agent's largest prompt, in blocks, summed."""
    return sum(-(-max(len(p) for p in prompts) // BLOCK) for prompts in agents.values())


# ------------------------------------------------------------------ an idle engine, simulated


def idle_replay(agents: dict[str, list[list[int]]], delays: list[float], blocks: int, mode: str, args) -> dict:
    """The replay where the engine is never the bottleneck (a GPU between tool calls): each request is
    served the moment it arrives, in the order the same delay draws give, through the engine's own radix
    cache and block pool as the scheduler drives them; no model runs."""
    from engine.kv_cache import BlockPool
    from engine.radix import RadixCache

    now = 0.0
    pool = BlockPool(blocks)
    radix = RadixCache(pool, BLOCK, clock=lambda: now)
    live = LiveSet(shared_blocks(agents))
    rngs = {name: random.Random(f"{args.seed}/{name}") for name in agents}
    queue = [(i * args.stagger, i, name, 0) for i, name in enumerate(agents)]
    prompt_tokens = cached = 0
    fresh = iter(range(10**9, 2 * 10**9))  # generated tokens: never part of a later prompt
    while queue:
        now, index, name, i = heapq.heappop(queue)
        prompt = agents[name][i]
        live.update(name, len(prompt))
        radix.expire()
        path = radix.match(prompt[:-1])
        radix.lock(path)
        radix.count_hits(path)
        prompt_tokens, cached = prompt_tokens + len(prompt), cached + len(path) * BLOCK
        if mode == "held":
            radix.release(name)
        tokens = prompt + [next(fresh) for _ in range(args.max_tokens)]
        computed = len(tokens) - 1  # the last sampled token is never fed back
        need = -(-computed // BLOCK) - len(path)
        radix.evict(need - pool.num_free)
        table = [node.block for node in path] + pool.allocate(need)
        full = computed // BLOCK
        pool.free(radix.insert(tokens[: full * BLOCK], table[:full]) + table[max(full, len(path)) :])
        radix.unlock(path)
        if mode == "held":
            radix.hold(name, tokens[:computed], args.tool_timeout * args.time_scale)
        if i + 1 < len(agents[name]):
            heapq.heappush(queue, (now + rngs[name].choice(delays) * args.time_scale, index, name, i + 1))
        else:
            live.update(name, 0)
    return {
        "cached_share": cached / prompt_tokens,
        "evicted_blocks": radix.num_evicted,
        "held_evicted_blocks": radix.num_held_evicted,
        "queued_evicted_blocks": radix.num_queued_evicted,
        "peak_live_blocks": live.peak,
    }


def idle_table(args) -> str:
    agents = agent_prompts(args.max_prompt, args.copies)
    delays = load_delays(args)
    working_set = working_set_blocks(agents)
    lines = [
        "| KV cache | of the working set | of the peak live set | LRU | held | |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for budget in (1.0, 0.75, 0.5, 0.375, 0.25, 0.125):
        blocks = int(working_set * budget)
        lru, held = (idle_replay(agents, delays, blocks, mode, args) for mode in MODES)
        lines.append(
            f"| {blocks:,} blocks | {budget:.1%} | {blocks / lru['peak_live_blocks']:.0%} | "
            f"{lru['cached_share']:.1%} | {held['cached_share']:.1%} | "
            f"{100 * (held['cached_share'] - lru['cached_share']):+.1f} points |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ one mode


@dataclass
class Agent:
    name: str
    prompt_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    model_s: float = 0.0  # its requests' latencies, queueing included
    job_s: float = 0.0
    ttfts: list[float] = field(default_factory=list)


def replay(args, mode: str) -> dict:
    from engine import Engine, EngineConfig, ReturnHint, SamplingParams, dummy_checkpoint
    from engine.config import SMOLLM2_135M

    agents = agent_prompts(args.max_prompt, args.copies)
    delays = load_delays(args)
    if args.shape == "llama3-8b":  # the GPU's: bf16 weights made on the card
        from bench_gpu import LLAMA3_8B, made_as_read

        shape = LLAMA3_8B
        checkpoint = made_as_read(shape)
    else:
        shape = SMOLLM2_135M.__class__(
            **{**asdict(SMOLLM2_135M), "num_layers": args.layers, "max_position_embeddings": args.max_prompt + 256}
        )
        checkpoint = dummy_checkpoint(shape, seed=0)
    kv_dtype_bytes = 2 if args.device.startswith("cuda") else 4
    working_set = working_set_blocks(agents)
    blocks = int(working_set * args.budget)
    config = EngineConfig(
        kv_cache_bytes=blocks * BLOCK * shape.kv_bytes_per_token(kv_dtype_bytes),
        max_num_batched_tokens=args.chunk,
        num_threads=args.threads,
        device=args.device,
    )
    engine = Engine(checkpoint, config)
    params = SamplingParams(temperature=0, max_tokens=args.max_tokens, ignore_eos=True)
    results = {name: Agent(name) for name in agents}
    live = LiveSet(shared_blocks(agents))
    start = time.perf_counter()

    def run(index: int, name: str) -> None:
        rng = random.Random(f"{args.seed}/{name}")
        hint = ReturnHint(name, args.tool_timeout * args.time_scale) if mode == "held" else None
        time.sleep(index * args.stagger)
        r, began = results[name], time.perf_counter()
        for i, prompt in enumerate(agents[name]):
            if i:
                time.sleep(rng.choice(delays) * args.time_scale)
            live.update(name, len(prompt))
            t0 = time.perf_counter()
            out = engine.generate([prompt], params, hint=hint)[0]
            r.model_s += time.perf_counter() - t0
            r.ttfts.append(out.ttft_s or 0.0)
            r.prompt_tokens += out.usage.prompt_tokens
            r.cached_tokens += out.usage.cached_tokens
            r.requests += 1
        r.job_s = time.perf_counter() - began
        live.update(name, 0)  # done: what it cached is dead
        done = sum(a.job_s > 0 for a in results.values())
        print(f"{mode}: {name} done in {r.job_s:.1f} s ({done}/{len(results)})", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=run, args=(i, name)) for i, name in enumerate(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = engine.stats()
    engine.shutdown()
    return {
        "mode": mode,
        "agents": [asdict(r) for r in results.values()],
        "wall_s": time.perf_counter() - start,
        "kv_blocks": blocks,
        "working_set_blocks": working_set,
        "peak_live_blocks": live.peak,
        "evicted_blocks": stats["evicted_blocks"],
        "held_evicted_blocks": stats["held_evicted_blocks"],
        "queued_evicted_blocks": stats["queued_evicted_blocks"],
        "saved_hit_tokens": stats["saved_hit_blocks"] * BLOCK,
        "preemptions": stats["preemptions"],
        "delays": {"count": len(delays), "median_s": statistics.median(delays)},
    }


# ------------------------------------------------------------------ both, side by side


def summary(run: dict) -> dict:
    agents = run["agents"]
    jobs = sorted(a["job_s"] for a in agents)
    model = sorted(a["model_s"] for a in agents)
    ttfts = sorted(t for a in agents for t in a["ttfts"])
    prompt = sum(a["prompt_tokens"] for a in agents)
    return {
        "cached_share": sum(a["cached_tokens"] for a in agents) / prompt,
        "prompt_tokens": prompt,
        "requests": sum(a["requests"] for a in agents),
        "job_p50_s": statistics.median(jobs),
        "job_p90_s": jobs[int(0.9 * (len(jobs) - 1))],
        "model_p50_s": statistics.median(model),
        "ttft_p50_s": statistics.median(ttfts),
        "evicted_blocks": run["evicted_blocks"],
        "held_evicted_blocks": run["held_evicted_blocks"],
        "queued_evicted_blocks": run.get("queued_evicted_blocks", 0),
        "saved_hit_tokens": run["saved_hit_tokens"],
        "preemptions": run["preemptions"],
        "wall_s": run["wall_s"],
    }


def table(runs: dict[str, dict]) -> str:
    s = {mode: summary(run) for mode, run in runs.items()}
    lru, held = s["lru"], s["held"]
    rows = [
        ("cached share of prompt tokens", "{:.1%}", "cached_share"),
        ("job completion p50", "{:.1f} s", "job_p50_s"),
        ("job completion p90", "{:.1f} s", "job_p90_s"),
        ("model time per agent p50", "{:.1f} s", "model_p50_s"),
        ("TTFT p50", "{:.2f} s", "ttft_p50_s"),
        ("blocks evicted", "{:,}", "evicted_blocks"),
        ("held blocks evicted", "{:,}", "held_evicted_blocks"),
        ("of them queued sessions'", "{:,}", "queued_evicted_blocks"),
        ("hits saved by holds (tokens)", "{:,}", "saved_hit_tokens"),
        ("preemptions", "{:,}", "preemptions"),
        ("wall", "{:.0f} s", "wall_s"),
    ]
    lines = ["| | LRU | held | |", "|---|---:|---:|---|"]
    for label, fmt, key in rows:
        note = ""
        if key == "cached_share":
            note = f"{100 * (held[key] - lru[key]):+.1f} points"
        elif key in ("job_p50_s", "job_p90_s", "model_p50_s", "ttft_p50_s") and held[key] > 0:
            note = (
                f"{lru[key] / held[key]:.2f}x shorter"
                if held[key] < lru[key]
                else f"{held[key] / lru[key]:.2f}x longer"
            )
        lines.append(f"| {label} | {fmt.format(lru[key])} | {fmt.format(held[key])} | {note} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=4, help="agents per recorded trajectory")
    ap.add_argument("--budget", type=float, default=0.5, help="KV cache as a share of the working set")
    ap.add_argument("--max-prompt", type=int, default=8192, help="replay each trajectory up to this prompt size")
    ap.add_argument("--max-tokens", type=int, default=16, help="tokens generated per request")
    ap.add_argument(
        "--tool-timeout",
        type=float,
        default=60.0,
        help="the return hint, in seconds (the harness's default tool timeout)",
    )
    ap.add_argument("--time-scale", type=float, default=1.0, help="multiply every delay and hint by this")
    ap.add_argument("--stagger", type=float, default=0.5, help="seconds between two agents' starts")
    ap.add_argument("--layers", type=int, default=2, help="layers of the SmolLM2-135M shape")
    ap.add_argument("--shape", choices=["smollm2-135m", "llama3-8b"], default="smollm2-135m")
    ap.add_argument("--chunk", type=int, default=2048, help="max_num_batched_tokens")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per engine")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mirror", type=Path, default=MIRROR)
    ap.add_argument("--runs", type=Path, help="a folder of mini-swe-agent .traj.json files")
    ap.add_argument("--delays", type=Path, help="a JSON list of delays in seconds (--save-delays writes one)")
    ap.add_argument("--save-delays", type=Path, help="write the delays drawn from and exit")
    ap.add_argument("--json", type=Path, help="write both modes' full results here")
    ap.add_argument(
        "--idle",
        action="store_true",
        help="simulate an engine that is never the bottleneck (no model: each request served as it arrives), "
        "both modes at budgets from 100%% to 12.5%% of the working set",
    )
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one mode, in a child process
    args = ap.parse_args()

    if args.save_delays is not None:
        args.save_delays.write_text(json.dumps(load_delays(args)))
        return
    if args.mode is not None:
        print(json.dumps(replay(args, args.mode)))
        return
    if args.idle:
        print(idle_table(args))
        return
    if args.delays is None:  # extract once, for both children
        saved = Path(tempfile.mkstemp(suffix=".json")[1])
        saved.write_text(json.dumps(load_delays(args)))
        args.delays = saved
    child = [sys.executable, __file__, *sys.argv[1:], "--delays", str(args.delays)]
    procs = {mode: subprocess.Popen([*child, "--mode", mode], stdout=subprocess.PIPE, text=True) for mode in MODES}
    runs = {}
    for mode, proc in procs.items():
        out, _ = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"the {mode} replay failed ({proc.returncode})")
        runs[mode] = json.loads(out.strip().splitlines()[-1])
    first = runs["lru"]
    print(
        f"{len(first['agents'])} agents ({args.copies} per trajectory, prompts up to {args.max_prompt:,} tokens), "
        f"KV cache {first['kv_blocks']:,} blocks = {args.budget:.0%} of the working set "
        f"({first['working_set_blocks']:,}) = "
        + " and ".join(
            f"{first['kv_blocks'] / run['peak_live_blocks']:.0%} of the peak live set under {mode} "
            f"({run['peak_live_blocks']:,})"
            for mode, run in runs.items()
        )
        + f"; delays from {first['delays']['count']:,} reply gaps "
        f"(median {first['delays']['median_s']:.0f} s) x {args.time_scale}; stagger {args.stagger} s; hint {args.tool_timeout:.0f} s; "
        + (f"SmolLM2-135M shape, {args.layers} layers" if args.shape == "smollm2-135m" else "Llama-3-8B shape")
        + f", dummy weights, {args.device}"
    )
    print(table(runs))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
