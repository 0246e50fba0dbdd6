"""Which tests need Docker, Ray or the model weights, and the quick tier (`pytest --quick`) that leaves them out.

A test is marked `docker`, `ray` or `model` by the fixtures it uses (directly or through other fixtures:
NEEDS below), or by hand (`pytestmark = pytest.mark.model` where it loads the model another way). Marks
cannot drift out of date: under `--quick`, a test that reaches the Docker engine, starts Ray or opens the
model file without its mark fails, saying which mark it lacks. The check watches this process's audit events
(Python's `sys.addaudithook`): a connection to Docker's socket, a `docker`, `raylet` or `gcs_server`
process started, the model file opened, a `harness serve` or a `harness` command with a local model started.
The quick tier also leaves out the few tests marked `slow` by hand (long end-to-end checks), so that it runs
in minutes; a test left unmarked there only makes it slower.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

NEEDS = {
    "docker": {"docker_ready"},
    "ray": {"ray_cluster", "ray_serve_instance"},
    "model": {"model_weights"},  # tests/conftest.py; the engine tests' checkpoint, engine and reference use it
}
MARKERS = [
    "slow: a long end-to-end check (kill -9 torture, 150-step runs, scale); left out by `make quick`",
    "docker: needs the Docker engine (its fixture is docker_ready); left out by `make quick`",
    "ray: starts Ray; `make test` runs these in a pytest process of their own, `make quick` leaves them out",
    "model: loads the embedded model's weights (the GGUF file); left out by `make quick`",
    "serial: acts on every container of this host (`prune`), or starts Ray Serve, whose health checks fail on a "
    "busy machine; `make test` runs these after the others, the prune ones beside the Serve ones (which use no "
    "Docker)",
]
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")
PROCESSES = {"docker": "docker", "raylet": "ray", "gcs_server": "ray"}
LOCAL = re.compile(r"^local(-int4)?(:|$)")  # a model string naming the in-process engine


def models(argv: list[str]) -> list[str]:
    """The model strings a command line names (`--model M` or `--model=M`); `--sandbox local` is none."""
    pairs = zip(argv, argv[1:], strict=False)
    return [b for a, b in pairs if a == "--model"] + [a.split("=", 1)[1] for a in argv if a.startswith("--model=")]


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in NEEDS.items():
            if used & fixtures:
                item.add_marker(marker)


def quick(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect what needs Docker, Ray or the model, and what is slow; watch the rest for what they reach
    unmarked."""
    kept, left = [], []
    for item in items:
        (left if any(item.get_closest_marker(m) for m in [*NEEDS, "slow"]) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
    Watch.install()


class Unmarked(RuntimeError):
    pass


class Watch:
    """What the tests reached that their marks do not allow, as (mark, what), until the next report takes it."""

    on = False
    reached: list[tuple[str, str]] = []
    model_file: str | None = None

    @classmethod
    def install(cls) -> None:
        try:
            from engine.weights import default_model_path

            cls.model_file = str(default_model_path())
        except Exception:  # no embedded model here: nothing can open it
            cls.model_file = None
        cls.on = True
        sys.addaudithook(cls.hear)

    @classmethod
    def hear(cls, event: str, args: tuple) -> None:
        if not cls.on:
            return
        if event == "open" and cls.model_file and isinstance(args[0], str | Path):
            if os.fspath(args[0]) == cls.model_file:
                cls.saw("model", f"opened the model file {cls.model_file}")
        elif event == "socket.connect" and len(args) > 1 and args[1] in DOCKER_SOCKETS:
            cls.saw("docker", f"connected to {args[1]}")
        elif event == "subprocess.Popen":
            argv = [os.fsdecode(a) for a in (args[1] if isinstance(args[1], list | tuple) else [args[1]])]
            name = Path(argv[0]).name if argv else ""
            if name in PROCESSES:
                cls.saw(PROCESSES[name], f"started {name}")
            elif name == "harness" and ("serve" in argv[1:] or any(LOCAL.match(a) for a in models(argv))):
                cls.saw("model", f"started `harness {' '.join(argv[1:3])}`, which loads the model")

    @classmethod
    def saw(cls, marker: str, what: str) -> None:
        """Note it for the report, and refuse it: the quick tier stays quick even where a test is unmarked."""
        if (marker, what) not in cls.reached:
            cls.reached.append((marker, what))
        raise Unmarked(f"the quick tier has no {marker}: this test {what} without the mark `{marker}`")

    @classmethod
    def judge(cls, item: pytest.Item, report: pytest.TestReport) -> None:
        """Fail the phase of the test (setup, call, teardown) in which it reached what its marks do not allow."""
        if not cls.reached:
            return
        reached, cls.reached = cls.reached, []
        marks = sorted({m for m, _ in reached})
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} {'; '.join(w for _, w in reached)}, but is not marked {' or '.join(marks)}, so "
            f"`make quick` ran it. Use the fixture that brings the mark "
            f"({'; '.join(' or '.join(sorted(NEEDS[m])) for m in marks)}) or mark it: pytest.mark.{marks[0]}."
        )
