"""A run as OpenTelemetry spans, after the GenAI semantic conventions, for the tools teams already look at agents
in (Phoenix, Langfuse, Jaeger, any OTLP backend).

One `invoke_agent` span per run; under it a `chat` span per model call (the reply's usage: input tokens with
the cached ones, cache reads and writes, output and reasoning tokens, the finish reason, the call's cost; a
failed call as a span with an error) and an `execute_tool` span per observation (the tool, the call's id, an
error's kind). The agent span carries the stop reason, the run's cost and, for a stop that is a failure, an
error status. `RunSpans` is a journal listener: live, it makes each span as its event is journaled (the spans
leave as the run goes, in batches); for a finished run (`harness export --format otel`) the same listener is fed
the journal. Times are the journal's: a model call runs from its reply's time less its latency, a tool call
from its observation's time less its duration.

Live spans are on when an OTLP endpoint is set: `--otel-endpoint URL` on the commands that run agents, or
OpenTelemetry's own `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. Spans go over
OTLP/HTTP (protobuf) to URL/v1/traces.
"""

from __future__ import annotations

import os
from typing import Any

from agent.journal.store import RunInfo
from core.events import Compacted, ContextOverflowed, Event, ModelFailed, ModelReplied, RunStopped, ToolObserved

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
FAILED_STOPS = ("harness_error", "environment_error", "model_error", "model_unavailable", "sandbox_dead")


def endpoint() -> str | None:
    """The traces endpoint the environment names (OpenTelemetry's own variables), or None: no live spans."""
    traces = os.environ.get(TRACES_ENDPOINT_ENV)
    if traces:
        return traces
    base = os.environ.get(ENDPOINT_ENV)
    return base.rstrip("/") + "/v1/traces" if base else None


def exporter_for(url: str) -> Any:
    """The span exporter that sends to `url`, an OTLP/HTTP traces endpoint."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=url)


def provider_for(url: str) -> Any:
    """A tracer provider that sends spans to `url` (an OTLP/HTTP traces endpoint) in batches; whoever makes it
    shuts it down, which sends what is left."""
    return provider_with(exporter_for(url))


def provider_with(exporter: Any) -> Any:
    """A tracer provider that hands its spans to `exporter` in batches."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "harness"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def ns(ts: float) -> int:
    return int(ts * 1e9)


def live_spans(info: RunInfo) -> RunSpans | None:
    """The listener that sends this run's spans as it goes, where an endpoint is set; its `close` sends the rest."""
    url = endpoint()
    return RunSpans(provider_for(url), info, owns=True) if url else None


class RunSpans:
    """A journal listener that turns one run's events into spans as they come. `owns`: its provider is its own,
    shut down (what is left sent) by `close`."""

    def __init__(self, provider: Any, info: RunInfo, owns: bool = False):
        from opentelemetry import trace

        self.trace = trace
        self.provider, self.owns = provider, owns
        self.tracer = provider.get_tracer("harness")
        self.info = info
        imported = info.imported or {}
        self.agent = str(imported.get("agent") or "harness")
        self.system = info.model.partition(":")[0] if ":" in info.model else info.model
        self.root: Any = None
        self.context: Any = None
        self.last_ts: float | None = None
        self.totals = {"input": 0, "output": 0, "cached": 0, "cost": 0.0, "unpriced": 0}

    def common(self) -> dict[str, Any]:
        return {"gen_ai.conversation.id": self.info.run_id, "gen_ai.provider.name": self.system}

    def __call__(self, event: Event) -> None:
        ts = event.ts or self.last_ts or 0.0
        if self.root is None:
            self.open(ts)
        if isinstance(event, ModelReplied):
            self.chat(event, ts)
        elif isinstance(event, ModelFailed):
            self.failed(event, ts)
        elif isinstance(event, ToolObserved):
            self.tool(event, ts)
        elif isinstance(event, Compacted | ContextOverflowed):
            self.root.add_event(
                "harness.compaction" if isinstance(event, Compacted) else "harness.context_overflow",
                {"harness.step": event.step, "harness.message": event.message},
                timestamp=ns(ts),
            )
        elif isinstance(event, RunStopped):
            self.stop(event, ts)
        self.last_ts = ts

    def open(self, ts: float) -> None:
        task = str(self.info.task.get("id", ""))
        self.root = self.tracer.start_span(
            f"invoke_agent {self.agent}",
            start_time=ns(ts),
            attributes={
                **self.common(),
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.agent,
                "gen_ai.agent.id": self.info.run_id,
                "gen_ai.request.model": self.info.model,
                "harness.task_id": task,
                "harness.policy": str(self.info.policy.get("name", "")),
            },
        )
        self.context = self.trace.set_span_in_context(self.root)

    def chat(self, e: ModelReplied, ts: float) -> None:
        reply, u = e.reply, e.reply.usage
        start = ts - reply.latency_s if reply.latency_s else (self.last_ts or ts)
        attributes: dict[str, Any] = {
            **self.common(),
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self.info.model,
            "gen_ai.response.model": reply.model or self.info.model,
            "gen_ai.response.finish_reasons": [reply.finish_reason],
            "gen_ai.usage.input_tokens": u.prompt_tokens,  # with the cached ones, as the conventions count them
            "gen_ai.usage.output_tokens": u.completion_tokens,
            "gen_ai.usage.cache_read.input_tokens": u.cached_tokens,
            "gen_ai.usage.cache_creation.input_tokens": u.cache_write_tokens,
            "gen_ai.usage.reasoning.output_tokens": u.reasoning_tokens,
            "harness.step": e.step,
            "harness.tool_calls": len(reply.message.tool_calls),
        }
        if e.cost_usd is not None:
            attributes["harness.cost_usd"] = e.cost_usd
        span = self.tracer.start_span(
            f"chat {reply.model or self.info.model}", context=self.context, start_time=ns(start), attributes=attributes
        )
        span.end(end_time=ns(ts))
        self.count(u.prompt_tokens, u.completion_tokens, u.cached_tokens, e.cost_usd)

    def failed(self, e: ModelFailed, ts: float) -> None:
        kind = "transient" if e.transient else "permanent"
        span = self.tracer.start_span(
            f"chat {self.info.model}",
            context=self.context,
            start_time=ns(self.last_ts or ts),
            attributes={
                **self.common(),
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": self.info.model,
                "error.type": kind,
                "harness.step": e.step,
            },
        )
        span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, e.message))
        span.end(end_time=ns(ts))
        if e.usage is not None:
            self.count(e.usage.prompt_tokens, e.usage.completion_tokens, e.usage.cached_tokens, e.cost_usd)

    def tool(self, e: ToolObserved, ts: float) -> None:
        o = e.observation
        attributes: dict[str, Any] = {
            **self.common(),
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": o.tool,
            "gen_ai.tool.call.id": o.call_id,
            "gen_ai.tool.type": "function",
            "harness.step": e.step,
            "harness.status": o.status,
        }
        if o.exit_code is not None:
            attributes["harness.exit_code"] = o.exit_code
        if o.status != "ok":
            attributes["error.type"] = o.error_kind or o.status
        span = self.tracer.start_span(
            f"execute_tool {o.tool}", context=self.context, start_time=ns(ts - o.duration_s), attributes=attributes
        )
        if o.status != "ok":
            span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, o.text[:300]))
        span.end(end_time=ns(ts))

    def count(self, prompt: int, completion: int, cached: int, cost: float | None) -> None:
        self.totals["input"] += prompt
        self.totals["output"] += completion
        self.totals["cached"] += cached
        if cost is None:
            self.totals["unpriced"] += 1
        else:
            self.totals["cost"] += cost

    def stop(self, e: RunStopped, ts: float) -> None:
        t = self.totals
        self.root.set_attributes(
            {
                "harness.stop_reason": e.reason,
                "harness.stop_message": e.message,
                "gen_ai.usage.input_tokens": t["input"],
                "gen_ai.usage.output_tokens": t["output"],
                "gen_ai.usage.cache_read.input_tokens": t["cached"],
                "harness.cost_usd": t["cost"],
                "harness.unpriced_calls": t["unpriced"],
            }
        )
        if e.reason in FAILED_STOPS:
            self.root.set_attribute("error.type", e.reason)
            self.root.set_status(self.trace.Status(self.trace.StatusCode.ERROR, e.message))
        self.root.end(end_time=ns(ts))
        self.root = None

    def close(self) -> None:
        """End the agent span of a run that stopped without a stop event (killed, or still going elsewhere), and
        send what is left when the provider is this listener's own."""
        if self.root is not None:
            self.root.set_attribute("harness.stop_reason", "unfinished")
            self.root.end(end_time=ns(self.last_ts) if self.last_ts else None)
            self.root = None
        if self.owns:
            self.provider.shutdown()
