"""Finished runs as OpenTelemetry spans, sent to an OTLP/HTTP endpoint: each run's journal fed to the same
listener that sends a live run's spans (agent.telemetry), so a run sent afterwards looks as it would have live,
at the times the journal recorded. Each run's spans are flushed before the next run's, so a run the endpoint did
not take is named rather than reported sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.journal.store import read_events
from agent.telemetry import RunSpans, exporter_for, provider_with
from evals.interop.exports.run import Recorded


@dataclass
class Tallied:
    """An exporter that counts the batches it could not hand over (the SDK only logs them)."""

    inner: Any
    failed: int = 0

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        self.failed += result is not SpanExportResult.SUCCESS
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.inner.shutdown()


def send(runs: list[Recorded], url: str) -> tuple[list[Path], list[str]]:
    """Every run's spans, each run's handed over before the next's begin: the runs sent, and one line per run
    not sent (once the endpoint has not taken a run's spans, the later runs are not tried)."""
    exporter = Tallied(exporter_for(url))
    provider = provider_with(exporter)
    sent: list[Path] = []
    refused: list[str] = []
    try:
        for rec in runs:
            if refused:
                refused.append(f"{rec.dir}: not sent, since {url} did not take an earlier run's spans.")
                continue
            spans = RunSpans(provider, rec.info)
            for event in read_events(rec.dir):
                spans(event)
            spans.close()
            provider.force_flush()
            if exporter.failed:
                refused.append(
                    f"{rec.dir}: {url} did not take its spans (no answer, or an error status); check that an "
                    "OTLP/HTTP collector listens there, then send it again."
                )
            else:
                sent.append(rec.dir)
    finally:
        provider.shutdown()
    return sent, refused
