"""Counts a batch's progress line shows: running, done, failed, skipped, retried, and the nodes in use."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.journal.store import write_json_atomic
from evals.executors.jobs import Done


@dataclass
class Tally:
    total: int
    running: dict[str, str] = field(default_factory=dict)  # key → node running it
    done: int = 0  # finished with a result, reused ones included
    failed: int = 0  # finished with an error
    skipped: int = 0  # not started: the batch's cost budget was reached
    retried: int = 0
    nodes: int = 1  # nodes in the cluster
    executor: str = "local"
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → attempts, node, status
    on_change: Callable[[Tally], None] = lambda t: None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def started(self, key: str, node: str) -> None:
        with self.lock:
            self.running[key] = node
        self.on_change(self)

    def retrying(self, key: str) -> None:
        with self.lock:
            self.running.pop(key, None)
            self.retried += 1
        self.on_change(self)

    def finished(self, done: Done) -> None:
        ok = done.error is None
        with self.lock:
            self.running.pop(done.key, None)
            if ok:
                self.done += 1
            else:
                self.failed += 1
            self.items[done.key] = {
                "status": "done" if ok else "error",
                "attempts": done.attempts,
                "node": done.node,
                "wall_s": done.wall_s,
            }
        self.on_change(self)

    def reused(self, key: str) -> None:
        """A finished item from an earlier run of the same batch, kept as it is."""
        with self.lock:
            self.done += 1
            self.items[key] = {"status": "reused", "attempts": 0, "node": "", "wall_s": 0.0}
        self.on_change(self)

    def not_started(self, key: str) -> None:
        """An item the batch's cost budget did not let start."""
        with self.lock:
            self.skipped += 1
            self.items[key] = {"status": "skipped", "attempts": 0, "node": "", "wall_s": 0.0}
        self.on_change(self)

    @property
    def ended(self) -> int:
        """Items the batch is through with: finished, failed or skipped."""
        return self.done + self.failed + self.skipped

    def line(self) -> str:
        skipped = f" · skipped {self.skipped} (budget)" if self.skipped else ""
        retried = f" · retried {self.retried}" if self.retried else ""
        # Nodes mean something only on a cluster; a local batch runs on this machine alone.
        nodes = f" · nodes in use {len(set(self.running.values()))}/{self.nodes}" if self.executor != "local" else ""
        return f"running {len(self.running)} · done {self.done} · failed {self.failed}{skipped}{retried}{nodes}"

    def write(self, path: Path, order: list[str]) -> None:
        """executor.json: where, how often and how long each item ran (written by both executors, so layouts match)."""
        write_json_atomic(
            path,
            {
                "executor": self.executor,
                "nodes": self.nodes,
                "retries": self.retried,
                "items": {k: self.items[k] for k in order if k in self.items},
            },
        )
