"""One in-process engine per local model string for a whole batch, shared by the batch's runs in this process.

    with shared_engines():
        client = load_model("local")   # every client made in the block: a view of the same engine
        ...
    # the block's engines are shut down here

A batch of local-model runs would otherwise load the weights and a KV cache for each run (about 2 GB
for the embedded model). The engine batches concurrent requests, so runs in threads share it as they
would share a server, its prefix cache included. Outside a block, `load_model` gives each caller an
engine of its own, which closing the client shuts down. Blocks nest: the outermost one shuts them down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any


class SharedEngines:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # held while an engine loads, so two runs never load the same one
        self.engines: dict[str, Any] = {}  # model string -> its engine
        self.depth = 0  # blocks open

    def get(self, spec: str, load: Callable[[], Any]) -> Any | None:
        """The engine of `spec` the open block shares, loaded by `load` the first time; None outside a block."""
        with self.lock:
            if not self.depth:
                return None
            if spec not in self.engines:
                self.engines[spec] = load()
            return self.engines[spec]

    @contextmanager
    def block(self) -> Iterator[None]:
        with self.lock:
            self.depth += 1
        try:
            yield
        finally:
            with self.lock:
                self.depth -= 1
                done, self.engines = (self.engines, {}) if not self.depth else ({}, self.engines)
            for engine in done.values():
                engine.shutdown()


SHARED = SharedEngines()


def shared_engines() -> AbstractContextManager[None]:
    """Within the block, local model strings loaded with `load_model` in this process share one engine each."""
    return SHARED.block()
