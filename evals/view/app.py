"""The viewer's HTTP side (FastAPI): the page, the listing it polls, a run's steps and one step's prompt.

    GET /                      the page (evals/view/page.html: plain HTML and script, nothing to build)
    GET /api/listing           every batch and run under the root, with status, cost and drift
    GET /api/run?path=P        one run's steps (evals/view/run_view.py)
    GET /api/prompt?path=P&step=N   the prompt that step was sent, rebuilt from the journal

The page asks for the listing again every second and for an open run's steps while it is running, so runs and
steps appear as they are journaled, without a reload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse

from evals.view.index import Index
from evals.view.run_view import prompt_at, run_view

PAGE = Path(__file__).with_name("page.html")


def make_app(root: Path) -> FastAPI:
    index = Index(root)
    app = FastAPI(title="harness view", docs_url=None, redoc_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return PAGE.read_text(encoding="utf-8")

    @app.get("/api/listing")
    def listing() -> dict[str, Any]:
        return index.listing()

    @app.get("/api/run")
    def run(path: str) -> dict[str, Any]:
        return run_view(_load(index, path))

    @app.get("/api/prompt")
    def prompt(path: str, step: int) -> list[dict[str, Any]]:
        run = _load(index, path)
        if not any(s.n == step and s.replied is not None for s in run.steps):
            raise HTTPException(404, f"{path} has no reply at step {step}")
        return prompt_at(run, step)

    return app


def _load(index: Index, path: str) -> Any:
    try:
        return index.load(path)
    except FileNotFoundError:
        raise HTTPException(404, f"{path} is not a run directory under {index.root}") from None
