"""Serving benchmark: 16 multi-turn conversations sent concurrently vs the same
conversations one at a time, against `harness serve`, through the official OpenAI SDK.

Prints, for each mode: wall time, throughput (completion tokens/s and requests/s), p50/p95
time to first token (client-measured, streaming), and the server-reported prefix-cache hit
rate and batching (from /metrics). Each mode's conversations start with their own salt,
so neither mode is served from the other's cache.

    .venv/bin/python benchmarks/bench_serve.py                    # starts `harness serve` itself
    .venv/bin/python benchmarks/bench_serve.py --url http://127.0.0.1:8000 --turns 2
    .venv/bin/python benchmarks/bench_serve.py --weights int4         # the 4-bit engine
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

SYSTEM = (
    "You are a concise assistant for a team of engineers who run agent benchmarks. "
    "Answer in one or two sentences and never repeat the question."
)
TOPICS = [
    "prefix caching",
    "continuous batching",
    "paged attention",
    "speculative decoding",
    "KV cache eviction",
    "chunked prefill",
    "tool calling",
    "JSON schema decoding",
    "beam search",
    "top-p sampling",
    "rotary embeddings",
    "grouped-query attention",
    "quantisation",
    "tokenizers",
    "context windows",
    "preemption",
]
FOLLOW_UPS = [
    "Why does it matter for agents?",
    "Give one pitfall.",
    "How would you measure it?",
    "Summarise in five words.",
]


@dataclass
class Turn:
    ttft_s: float
    latency_s: float
    completion_tokens: int
    prompt_tokens: int
    cached_tokens: int


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def turn(client: openai.OpenAI, model: str, messages: list[dict], max_tokens: int) -> tuple[Turn, str]:
    start = time.perf_counter()
    ttft, text, usage = None, [], None
    stream = client.chat.completions.create(
        model=model,
        messages=messages,
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if ttft is None and (choice.delta.content or choice.finish_reason):
                ttft = time.perf_counter() - start
            text.append(choice.delta.content or "")
    latency = time.perf_counter() - start
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    return Turn(ttft or latency, latency, usage.completion_tokens, usage.prompt_tokens, cached), "".join(text)


def conversation(client: openai.OpenAI, model: str, salt: str, index: int, turns: int, max_tokens: int) -> list[Turn]:
    messages = [
        {"role": "system", "content": f"[session {salt}] {SYSTEM}"},
        {"role": "user", "content": f"In one sentence, what is {TOPICS[index % len(TOPICS)]}?"},
    ]
    out = []
    for t in range(turns):
        result, text = turn(client, model, messages, max_tokens)
        out.append(result)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": FOLLOW_UPS[t % len(FOLLOW_UPS)]},
        ]
    return out


def scrape(url: str) -> dict[str, float]:
    out = {}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics", timeout=30).text):
        for s in family.samples:
            if not s.labels or s.name.endswith("_bucket") and s.labels.get("le") == "1":
                out[s.name] = s.value
    return out


def run_mode(client, url: str, model: str, name: str, n: int, turns: int, max_tokens: int, concurrent: bool) -> dict:
    before = scrape(url)
    start = time.perf_counter()
    if concurrent:
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(lambda i: conversation(client, model, name, i, turns, max_tokens), range(n)))
    else:
        results = [conversation(client, model, name, i, turns, max_tokens) for i in range(n)]
    wall = time.perf_counter() - start
    after = scrape(url)
    flat = [t for conv in results for t in conv]
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    steps = d.get("engine_step_seqs_count", 0)
    return {
        "mode": name,
        "requests": len(flat),
        "wall_s": wall,
        "tok_s": sum(t.completion_tokens for t in flat) / wall,
        "req_s": len(flat) / wall,
        "ttft_p50": percentile([t.ttft_s for t in flat], 0.5),
        "ttft_p95": percentile([t.ttft_s for t in flat], 0.95),
        "latency_p50": percentile([t.latency_s for t in flat], 0.5),
        "hit_rate_server": d.get("engine_cached_tokens_total", 0) / max(1, d.get("engine_prompt_tokens_total", 0)),
        "hit_rate_usage": sum(t.cached_tokens for t in flat) / max(1, sum(t.prompt_tokens for t in flat)),
        "seqs_per_step": d.get("engine_step_seqs_sum", 0) / steps if steps else 0.0,
        "max_batch": after.get("engine_max_batch_seqs", 0),
    }


def start_server(port: int, weights: str) -> tuple[subprocess.Popen, str]:
    harness = str(Path(sys.executable).parent / "harness")
    proc = subprocess.Popen(
        [harness, "serve", "--port", str(port), "--weights", weights],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("harness serve did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="an already running server (no /v1); default: start `harness serve`")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--weights", default="float32", help="weights of the server it starts: float32 or int4")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    args = ap.parse_args()

    proc = None
    url = args.url
    if url is None:
        proc, url = start_server(args.port, args.weights)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=600)
        client.chat.completions.create(
            model=args.model, messages=[{"role": "user", "content": "warm up"}], max_tokens=2
        )
        stamp = str(time.time_ns())
        rows = [
            run_mode(
                client, url, args.model, f"concurrent-{stamp}", args.conversations, args.turns, args.max_tokens, True
            ),
            run_mode(
                client, url, args.model, f"sequential-{stamp}", args.conversations, args.turns, args.max_tokens, False
            ),
        ]
        overall = scrape(url).get("engine_cache_hit_rate", float("nan"))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)

    print(f"{args.conversations} conversations x {args.turns} turns, max_tokens {args.max_tokens}, greedy, streaming")
    head = f"{'mode':<11} {'reqs':>5} {'wall s':>8} {'tok/s':>7} {'req/s':>6} {'TTFT p50':>9} {'TTFT p95':>9} {'lat p50':>8} {'hit(srv)':>9} {'hit(usage)':>10} {'seqs/step':>9}"
    print(head)
    for r in rows:
        print(
            f"{r['mode'].split('-')[0]:<11} {r['requests']:>5} {r['wall_s']:>8.1f} {r['tok_s']:>7.1f} {r['req_s']:>6.2f} "
            f"{r['ttft_p50']:>8.2f}s {r['ttft_p95']:>8.2f}s {r['latency_p50']:>7.2f}s {r['hit_rate_server']:>9.1%} "
            f"{r['hit_rate_usage']:>10.1%} {r['seqs_per_step']:>9.2f}"
        )
    c, s = rows
    print(
        f"concurrent vs sequential: throughput x{c['tok_s'] / s['tok_s']:.2f}; max sequences in one step {c['max_batch']:.0f}"
    )
    print(f"server-reported cache hit rate since start (engine_cache_hit_rate): {overall:.1%}")


if __name__ == "__main__":
    main()
