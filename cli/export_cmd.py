"""`harness export RUN_DIR|BATCH_DIR --format atif|inspect|otel`: our runs in other harnesses' formats, or as
OpenTelemetry spans sent to a backend."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from agent.telemetry import endpoint
from cli.otel_options import traces_url
from cli.output import console, exits_on_error, text, warn
from evals.interop.exports.write import export


class Format(str, Enum):
    atif = "atif"
    inspect = "inspect"
    otel = "otel"


@exits_on_error
def export_command(
    path: Path = typer.Argument(..., help="A run directory, or a batch folder of run directories."),
    format: Format = typer.Option(
        ...,
        "--format",
        "-f",
        help="atif: one ATIF trajectory per run, RUN.atif.json (Harbor, Docent); inspect: one Inspect AI eval "
        "log, one sample per run (`inspect view --log-dir DIR`); otel: each run's OpenTelemetry spans (GenAI "
        "conventions) sent to --otel-endpoint.",
    ),
    out: Path = typer.Option(None, help="Folder the files go to, created if missing (default: PATH itself)."),
    otel_endpoint: str = typer.Option(
        None,
        "--otel-endpoint",
        help="With --format otel: the OTLP/HTTP endpoint, e.g. http://localhost:6006 (default: "
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT).",
    ),
) -> None:
    """Write a run or a batch as ATIF trajectories or an Inspect AI eval log, or send it as OpenTelemetry spans,
    built from each run's journal."""
    url = traces_url(otel_endpoint) if otel_endpoint else endpoint()
    done = export(path, format.value, out, url)
    if format == Format.otel:
        for sent in done.written:
            console.print(text(f"sent {sent} to {url}"), soft_wrap=True)
        for why in done.skipped:
            console.print(text(("error:", "red"), f" {why}"), soft_wrap=True)
        raise typer.Exit(2 if done.skipped else 0)
    for note in done.notes:
        warn(note)
    for written in done.written:
        console.print(text(f"wrote {written}"), soft_wrap=True)
    for why in done.skipped:
        console.print(text(("error:", "red"), f" {why}"), soft_wrap=True)
    if done.skipped:
        raise typer.Exit(2)
