"""Prometheus metrics of one server: traffic counters kept by the handlers, and the
engine's own state (queues, KV blocks, batching) read at scrape time.

`engine_step_seqs` is a histogram of how many sequences each engine step batched,
built from the engine's step records: proof of batching that does not rely on timing.
"""

import threading

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from engine.engine import Engine
from engine.output import RequestOutput

STEP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class EngineCollector(Collector):
    def __init__(self, engine: Engine, tokens: "Metrics"):
        self.engine = engine
        self.tokens = tokens
        self.last_step = -1
        self.bucket_counts = [0] * len(STEP_BUCKETS)
        self.over = 0  # steps above the largest bucket
        self.seqs_sum = 0
        self.lock = threading.Lock()

    def _fold_steps(self, steps) -> None:
        # The engine keeps a bounded history; fold each new step in once. Steps older than
        # that history and never scraped are missed, which only happens between very rare scrapes.
        for s in steps:
            if s.step <= self.last_step:
                continue
            self.last_step = s.step
            self.seqs_sum += s.num_seqs
            for i, bound in enumerate(STEP_BUCKETS):
                if s.num_seqs <= bound:
                    self.bucket_counts[i] += 1
                    break
            else:
                self.over += 1

    def collect(self):
        st = self.engine.stats()
        with self.lock:
            self._fold_steps(st["recent_steps"])
            cumulative, buckets = 0, []
            for bound, n in zip(STEP_BUCKETS, self.bucket_counts):
                cumulative += n
                buckets.append((str(bound), cumulative))
            buckets.append(("+Inf", cumulative + self.over))
            seqs_sum = self.seqs_sum
        hist = HistogramMetricFamily("engine_step_seqs", "Sequences batched in one engine step")
        hist.add_metric([], buckets, seqs_sum)
        yield hist
        yield CounterMetricFamily("engine_steps", "Engine steps run", value=st["num_steps"])
        yield GaugeMetricFamily(
            "engine_max_batch_seqs", "Most sequences ever batched in one step", value=st["max_batch_seqs"]
        )
        yield GaugeMetricFamily("engine_requests_running", "Requests being decoded or prefilled", value=st["running"])
        yield GaugeMetricFamily("engine_requests_waiting", "Requests queued for admission", value=st["waiting"])
        yield GaugeMetricFamily("engine_kv_blocks_total", "KV cache blocks", value=st["total_blocks"])
        yield GaugeMetricFamily(
            "engine_kv_cache_tokens", "Tokens the KV cache holds", value=st["total_blocks"] * st["block_size"]
        )
        yield GaugeMetricFamily(
            "engine_kv_blocks_used",
            "KV cache blocks not free (running requests and prefix cache)",
            value=st["total_blocks"] - st["free_blocks"],
        )
        yield GaugeMetricFamily(
            "engine_kv_blocks_cached", "KV cache blocks held by the prefix cache", value=st["cached_blocks"]
        )
        yield CounterMetricFamily(
            "engine_preemptions", "Requests preempted for lack of KV blocks", value=st["preemptions"]
        )
        yield CounterMetricFamily(
            "engine_kv_blocks_evicted", "Prefix-cache blocks evicted to make room", value=st["evicted_blocks"]
        )
        yield GaugeMetricFamily(
            "engine_kv_blocks_held",
            "Prefix-cache blocks kept ahead of LRU for sessions expected back (X-Harness-Return-Within)",
            value=st["held_blocks"],
        )
        yield GaugeMetricFamily("engine_sessions_held", "Sessions whose prefix is held", value=st["held_sessions"])
        yield CounterMetricFamily(
            "engine_kv_blocks_held_evicted",
            "Held blocks evicted because no other block could make room",
            value=st["held_evicted_blocks"],
        )
        yield CounterMetricFamily(
            "engine_cache_hits_saved_tokens",
            "Prompt tokens served from blocks that LRU would have evicted but a hold kept",
            value=st["saved_hit_blocks"] * st["block_size"],
        )
        prompt, cached = self.tokens.prompt_total(), self.tokens.cached_total()
        yield GaugeMetricFamily(
            "engine_cache_hit_rate",
            "Prompt tokens served from the prefix cache / prompt tokens, since start",
            value=cached / prompt if prompt else 0.0,
        )


class Metrics:
    def __init__(self, engine: Engine):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "engine_http_requests", "HTTP API requests by API and outcome", ["api", "outcome"], registry=r
        )
        self.prompt_tokens = Counter("engine_prompt_tokens", "Prompt tokens, cached ones included", registry=r)
        self.cached_tokens = Counter("engine_cached_tokens", "Prompt tokens served from the prefix cache", registry=r)
        self.completion_tokens = Counter("engine_completion_tokens", "Generated tokens", registry=r)
        r.register(EngineCollector(engine, self))
        self._prompt = self._cached = 0  # for the hit rate; Counter values are not public API

    def prompt_total(self) -> int:
        return self._prompt

    def cached_total(self) -> int:
        return self._cached

    def record(self, output: RequestOutput) -> None:
        self.prompt_tokens.inc(output.usage.prompt_tokens)
        self.cached_tokens.inc(output.usage.cached_tokens)
        self.completion_tokens.inc(output.usage.completion_tokens)
        self._prompt += output.usage.prompt_tokens
        self._cached += output.usage.cached_tokens

    def request(self, api: str, status: int) -> None:
        outcome = (
            "ok"
            if status < 400
            else "client_gone"
            if status == 499
            else "client_error"
            if status < 500
            else "server_error"
        )
        self.requests.labels(api, outcome).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
