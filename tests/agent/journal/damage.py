"""Damage done to a real run folder's events.jsonl, the ways it happens: a crash mid-write tears the
last line, a disk or a copy flips a byte, a journal loses its end. The readers' tests and
benchmarks/faults_files.py feed the harness journals damaged here."""

from __future__ import annotations

from pathlib import Path

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.policy import HarnessPolicy
from tests.agent.helpers import WRITE_READ_SUBMIT


def finished_run(runs: Path) -> Path:
    """A real four-step run in `runs`, finished with a submission: what the damage is done to."""
    _, run_dir = start(
        RunSpec(
            Task(id="echo", prompt="Write a.txt, read it, submit."),
            ScriptedModel(WRITE_READ_SUBMIT),
            HarnessPolicy(),
            runs,
        )
    )
    return run_dir


def lines(run_dir: Path) -> list[bytes]:
    return (Path(run_dir) / "events.jsonl").read_bytes().splitlines(keepends=True)


def tear(run_dir: Path, lineno: int) -> None:
    """Keep the lines before `lineno` and the first half of that line: the process died writing it."""
    kept = lines(run_dir)
    torn = kept[lineno - 1]
    (Path(run_dir) / "events.jsonl").write_bytes(b"".join(kept[: lineno - 1]) + torn[: len(torn) // 2])


def flip(run_dir: Path, lineno: int) -> None:
    """Flip the lowest bit of one byte a third of the way into line `lineno`; the line stays whole."""
    kept = lines(run_dir)
    line = bytearray(kept[lineno - 1])
    line[len(line) // 3] ^= 0x01
    kept[lineno - 1] = bytes(line)
    (Path(run_dir) / "events.jsonl").write_bytes(b"".join(kept))


def cut(run_dir: Path, keep: int) -> None:
    """Keep only the first `keep` lines, each whole: a journal that lost its end, with nothing torn."""
    (Path(run_dir) / "events.jsonl").write_bytes(b"".join(lines(run_dir)[:keep]))
