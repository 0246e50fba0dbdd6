"""`harness view [DIR]`: a local web viewer over a folder of runs (evals/view), in this one process."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import typer

from cli.output import console, exits_on_error, text
from core.errors import HarnessError


@exits_on_error
def view_command(
    folder: Path = typer.Argument(Path("runs"), help="A runs folder, a batch folder or one run directory."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (the default serves this machine only)."),
    port: int = typer.Option(8765, min=0, max=65535, help="Port to listen on (0: any free one)."),
) -> None:
    """Browse batches and runs in the browser: status, cost and drift of each, filters and search, a run's steps
    with replies, calls, observations and what the context policy did to each prompt. Running batches fill in
    as they go. Stop with Ctrl-C."""
    if not folder.is_dir():
        raise HarnessError(f"{folder} is not a folder; pass a runs folder, a batch folder or a run directory.")
    import uvicorn

    from evals.view.app import make_app

    listener = _bind(host, port)
    url = f"http://{host}:{listener.getsockname()[1]}/"
    console.print(text(f"harness view of {folder.resolve()} at {url} (Ctrl-C stops it)"), soft_wrap=True)
    server = uvicorn.Server(uvicorn.Config(make_app(folder), log_level="warning"))
    try:
        server.run(sockets=[listener])
    finally:
        listener.close()


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a port in use is a clear error before anything starts."""
    try:
        sock = socket.create_server((host, port), reuse_port=False)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise HarnessError(
                f"Port {port} on {host} is in use; pick another with --port (0: any free one)."
            ) from None
        raise HarnessError(f"Cannot listen on {host}:{port}: {e.strerror or e}.") from None
    return sock
