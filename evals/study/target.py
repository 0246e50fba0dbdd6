"""The engine a study runs against, and what it says about itself over one policy's runs.

In-process (`local`, `local-int4`, `local:PATH`): the checkpoint is read once and each policy gets a
fresh engine with the study's KV cache size, so no policy starts on another's cached prefixes; the
engine's stats give evictions, preemptions and steps. A served engine
(`openai-compatible:http://HOST:PORT/v1#NAME`, e.g. `harness serve`): its /metrics gives the same,
read before and after each policy, and its prefix cache is reset before each (`POST
/reset_prefix_cache`), so that no policy is served the prefixes another left. A server without that
endpoint shares its cache among the policies, in the order they run (a warning says so). Any other
model: the runs' own usage only.

Replicas (a point with a router): the study starts N engines of the in-process model on Ray Serve
(engine/server/replicas.py) behind one URL for the point, drives them as a served engine, and stops
them after it. Their merged /metrics has each replica's samples (a `replica` label) beside the sums:
the sums are the counters, and each replica's prompt tokens give the load imbalance.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agent.models import load_model
from agent.models.base import ModelClient
from agent.models.spec import parse_model
from core.errors import HarnessError
from evals.study.grid import Setting, StudySpec

log = logging.getLogger("harness.study")

# /metrics sample -> the name a study gives it
SERVED = {
    "engine_prompt_tokens_total": "prompt_tokens",
    "engine_cached_tokens_total": "cached_tokens",
    "engine_preemptions_total": "preemptions",
    "engine_steps_total": "engine_steps",
    "engine_kv_blocks_evicted_total": "evicted_blocks",
    "engine_kv_cache_tokens": "cache_tokens",
}


@dataclass(frozen=True)
class EngineCounters:
    """What the engine counted over one policy's runs; None where this engine does not say."""

    source: str  # "engine stats" | "/metrics" | "none"
    prompt_tokens: int | None = None  # as the engine counted them (a served engine)
    cached_tokens: int | None = None
    evicted_blocks: int | None = None
    preemptions: int | None = None
    engine_steps: int | None = None
    cache_tokens: int | None = None  # tokens the KV cache holds (blocks × block size)
    replica_prompt_tokens: dict[str, int] | None = None  # by replica, where several engines answer


class Target:
    """One policy's engine: a client per run, and the engine's counters."""

    def __init__(self, model: str, engine: Any = None, metrics_url: str | None = None):
        self.model, self.engine, self.metrics_url = model, engine, metrics_url

    def client(self, task: str) -> ModelClient:
        """A client for one run of `task`, which the run's maker closes (a view of this target's engine leaves it
        running). A model string that names `{task}` is the task's own (a scripted model per task)."""
        if self.engine is None:
            return load_model(self.model.replace("{task}", task))
        from agent.models.local import LocalModel

        return LocalModel(engine=self.engine, name=self.model)

    def read(self) -> dict[str, Any]:
        if self.engine is not None:
            st = self.engine.stats()
            return {
                "evicted_blocks": st["evicted_blocks"],
                "preemptions": st["preemptions"],
                "engine_steps": st["num_steps"],
                "cache_tokens": st["total_blocks"] * self.engine.config.block_size,
            }
        if self.metrics_url is not None:
            return scrape(self.metrics_url)
        return {}

    def counters(self, before: dict[str, Any]) -> EngineCounters:
        after = self.read()
        source = "engine stats" if self.engine is not None else "/metrics" if self.metrics_url else "none"
        delta = {k: int(v - before.get(k, 0)) for k, v in after.items() if k in SERVED.values() and k != "cache_tokens"}
        replicas = after.get("replica_prompt_tokens")
        if replicas is not None:  # a replica replaced meanwhile counts from zero; one gone is left out
            earlier = before.get("replica_prompt_tokens") or {}
            replicas = {r: n - earlier.get(r, 0) for r, n in sorted(replicas.items())}
        return EngineCounters(
            source=source, cache_tokens=after.get("cache_tokens"), replica_prompt_tokens=replicas, **delta
        )


def scrape(url: str) -> dict[str, Any]:
    try:
        text = httpx.get(url, timeout=60).text
    except httpx.HTTPError as e:
        raise HarnessError(
            f"Cannot read the server's metrics at {url}: {e}. Is `harness serve` running there?"
        ) from None
    return counters_of(text)


def counters_of(metrics: str) -> dict[str, Any]:
    """A /metrics page's counters; with several replicas (samples labelled `replica`), their sums,
    and each replica's prompt tokens as `replica_prompt_tokens`."""
    out: dict[str, Any] = {}
    replicas: dict[str, int] = {}
    for family in text_string_to_metric_families(metrics):
        for s in family.samples:
            replica = s.labels.get("replica")
            if replica is None and s.name in SERVED:
                out[SERVED[s.name]] = int(s.value)
            elif replica is not None and s.name == "engine_prompt_tokens_total":
                replicas[replica] = int(s.value)
    if replicas:
        out["replica_prompt_tokens"] = replicas
    return out


def server_root(base_url: str) -> str:
    """The server behind an OpenAI-compatible base URL (`http://HOST:PORT/v1` -> `http://HOST:PORT`)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def reset_prefix_cache(root: str) -> None:
    """Ask the server to forget its cached prefixes; a server without that endpoint is warned about."""
    try:
        response = httpx.post(f"{root}/reset_prefix_cache", timeout=60)
    except httpx.HTTPError as e:
        raise HarnessError(f"Cannot reach the server at {root}: {e}. Is `harness serve` running there?") from None
    if response.status_code in (404, 405):
        log.warning(
            "%s cannot reset its prefix cache: each policy may be served prefixes the policies before it left", root
        )
        return
    response.raise_for_status()


@contextmanager
def checkpoint_for(model: str) -> Iterator[Any]:
    """The in-process model's weights, read once for every engine of a study; None for other models."""
    m = parse_model(model)
    if not m.is_local:
        yield None
        return
    from engine import EngineError, default_model_path, load_checkpoint

    try:
        checkpoint = load_checkpoint(m.path or default_model_path())
    except EngineError as e:
        raise HarnessError(f"Cannot load the local model {model}: {e}") from None
    yield checkpoint


def engine_config(spec: StudySpec, kv_cache_mb: int | None, concurrency: int, threads: int | None = None):
    """The in-process engines' configuration at a point of the study: room for every run in flight
    on one engine, as on one of several."""
    from engine import EngineConfig

    config = EngineConfig(
        weights="int4" if parse_model(spec.model).kind == "local-int4" else "float32",
        device=spec.device,
        num_threads=threads,
    )
    config = replace(config, max_num_seqs=max(config.max_num_seqs, concurrency))
    if spec.max_batched_tokens:
        config = replace(config, max_num_batched_tokens=spec.max_batched_tokens)
    return replace(config, kv_cache_bytes=kv_cache_mb << 20) if kv_cache_mb else config


REPLICA_THREADS = 1  # torch threads (and Ray CPUs) per CPU replica: two replicas fit a 2-core machine
REPLICA_NAME = "replica"  # the model name the replicas answer to


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(spec: StudySpec, setting: Setting) -> Iterator[str]:
    """The model string a point's policies run against: the study's own, or, at a point with a router,
    its replicas started on Ray Serve for the point (`openai-compatible:URL/v1#replica`)."""
    if setting.router is None:
        yield spec.model
        return
    from engine.server.replicas import running

    cpu = spec.device == "cpu"
    config = engine_config(spec, setting.kv_cache_mb, setting.concurrency, REPLICA_THREADS if cpu else None)
    path = parse_model(spec.model).path
    with running(
        setting.replicas,
        setting.router,
        path,
        config,
        [REPLICA_NAME],
        port=free_port(),
        imbalance=spec.router_imbalance,
    ) as url:
        yield f"openai-compatible:{url}/v1#{REPLICA_NAME}"


@contextmanager
def open_target(model: str, checkpoint: Any, setting: Setting, spec: StudySpec) -> Iterator[Target]:
    """One policy's engine: `model`'s server (its prefix cache reset), or a fresh in-process engine."""
    m = parse_model(model)
    if not m.is_local:
        url = m.url if m.kind == "openai-compatible" else None
        if url:
            reset_prefix_cache(server_root(url))
        yield Target(model, metrics_url=server_root(url) + "/metrics" if url else None)
        return
    from engine import Engine

    engine = Engine(checkpoint, engine_config(spec, setting.kv_cache_mb, setting.concurrency))
    try:
        yield Target(model, engine=engine)
    finally:
        engine.shutdown()
