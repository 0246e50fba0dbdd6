"""A run's OpenTelemetry spans, as the GenAI conventions name them, from the journal a run writes: one agent span,
a chat span per model call, an execute_tool span per observation, under the agent span, at the journal's times.
(tests/agent/test_telemetry_backend.py sends them to a real OTLP backend.)"""

from __future__ import annotations

import pytest

from agent.journal.store import read_events, read_run_info
from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from agent.telemetry import RunSpans
from core.policy import HarnessPolicy
from core.types import Usage
from tests.agent.helpers import call

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk (the otel extra) makes the spans")


def spans_of(run_dir):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = RunSpans(provider, read_run_info(run_dir))
    for event in read_events(run_dir):
        spans(event)
    spans.close()
    return exporter.get_finished_spans()


def test_a_run_is_an_agent_span_over_chat_and_tool_spans_with_usage_and_errors(tmp_path):
    usage = Usage(
        prompt_tokens=1200, cached_tokens=1000, cache_write_tokens=100, completion_tokens=40, reasoning_tokens=7
    )
    replies = [
        call("shell", command="ls").model_copy(update={"usage": usage}),
        call("shell", command="false").model_copy(update={"usage": usage}),
        call("submit", answer="done").model_copy(update={"usage": usage}),
    ]
    _, run_dir = start(RunSpec(Task(id="t", prompt="go"), ScriptedModel(replies), HarnessPolicy(), tmp_path))
    spans = spans_of(run_dir)
    [agent] = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    chats = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"]
    tools = [s for s in spans if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert agent.name == "invoke_agent harness" and agent.attributes["gen_ai.agent.id"] == run_dir.name
    assert agent.attributes["harness.stop_reason"] == "submitted" and agent.status.is_ok
    assert len(chats) == 3 and len(tools) == 3
    assert {s.parent.span_id for s in chats + tools} == {agent.context.span_id}
    first = chats[0].attributes
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (1200, 40)
    assert first["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert first["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert first["gen_ai.usage.reasoning.output_tokens"] == 7
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert all(s.attributes["gen_ai.conversation.id"] == run_dir.name for s in spans)
    failed = [s for s in tools if s.attributes.get("error.type")]
    assert [(s.name, s.attributes["error.type"]) for s in failed] == [("execute_tool shell", "nonzero_exit")]
    assert not failed[0].status.is_ok
    assert agent.start_time <= min(s.start_time for s in chats) and agent.end_time >= max(s.end_time for s in tools)
    assert agent.attributes["gen_ai.usage.input_tokens"] == 3600


def test_a_failed_stop_makes_the_agent_span_an_error(tmp_path):
    _, run_dir = start(RunSpec(Task(id="t", prompt="go"), ScriptedModel([]), HarnessPolicy(), tmp_path))
    [agent] = [s for s in spans_of(run_dir) if s.name.startswith("invoke_agent")]
    stop = agent.attributes["harness.stop_reason"]
    assert stop in ("model_error", "model_unavailable") and agent.attributes["error.type"] == stop
    assert not agent.status.is_ok


def test_an_endpoint_that_is_not_http_is_refused_before_a_run_starts(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(
        app, ["run", "--task", "go", "--model", "scripted:x.yaml", "--out", str(tmp_path), "--otel-endpoint", "ftp://x"]
    )
    assert result.exit_code == 2 and "is not an http(s) URL" in result.output
    assert not any(tmp_path.iterdir())


def test_the_endpoint_names_the_traces_path_once():
    from cli.otel_options import traces_url

    assert traces_url("http://localhost:6006") == "http://localhost:6006/v1/traces"
    assert traces_url("http://localhost:4318/v1/traces") == "http://localhost:4318/v1/traces"
