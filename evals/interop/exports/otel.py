"""Finished runs as OpenTelemetry spans, sent to an OTLP/HTTP endpoint: each run's journal fed to the same
listener that sends a live run's spans (agent.telemetry), so a run sent afterwards looks as it would have live,
at the times the journal recorded."""

from __future__ import annotations

from agent.journal.store import read_events
from agent.telemetry import RunSpans, provider_for
from evals.interop.exports.run import Recorded


def send(runs: list[Recorded], url: str) -> None:
    """Every run's spans, then the provider shut down: what it batched is sent before this returns."""
    provider = provider_for(url)
    try:
        for rec in runs:
            spans = RunSpans(provider, rec.info)
            for event in read_events(rec.dir):
                spans(event)
            spans.close()
    finally:
        provider.shutdown()
