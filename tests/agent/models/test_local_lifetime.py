"""The in-process engine's lifetime: a closed local client frees its engine and gives its memory back, and a
batch's runs share one."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

import pytest

from agent.models import load_model
from agent.models.local import LocalModel
from agent.models.shared import shared_engines
from core.policy import ModelParams
from core.types import Message
from engine import EngineStoppedError
from engine.heap import give_back_heap

pytestmark = pytest.mark.model


def engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "engine-loop"]


def test_a_closed_local_client_frees_its_engine():
    before = engine_threads()
    client = load_model("local")
    assert isinstance(client, LocalModel)
    engine = weakref.ref(client.engine)
    thread = client.engine.loop.thread
    assert thread is not None and thread.is_alive() and thread not in before
    client.close()
    assert not thread.is_alive()
    assert not hasattr(client.engine, "model") and not hasattr(client.engine, "kv")  # freed while still referred to
    del client
    assert engine() is None  # nothing keeps the engine: no garbage collection needed to reclaim it
    assert engine_threads() == before


def resident_mb() -> float:
    return next(int(line.split()[1]) / 1024 for line in Path("/proc/self/status").open() if line.startswith("VmRSS:"))


def test_a_closed_local_client_gives_its_memory_back():
    """Without handing the freed heap back, a process kept about half of an engine's memory after closing it,
    and a process that opened engines one after another (a test suite, a study) grew with each."""
    give_back_heap()  # what earlier work in this process freed is not counted as the engine's
    before = resident_mb()
    client = load_model("local")
    client.complete([Message(role="user", text="Say hi")], [], ModelParams(max_tokens=4))
    loaded = resident_mb()
    client.close()
    assert resident_mb() - before < 0.3 * (loaded - before), (before, loaded, resident_mb())


def test_a_batch_shares_one_engine_and_shuts_it_down_when_it_ends():
    with shared_engines():
        first, second = load_model("local"), load_model("local")
        assert isinstance(first, LocalModel) and isinstance(second, LocalModel)
        assert first.engine is second.engine
        thread = first.engine.loop.thread
        assert thread is not None
        with shared_engines():  # a block inside a batch's (a study's, say) shares the batch's engine
            assert load_model("local").engine is first.engine  # type: ignore[attr-defined]
        first.close()  # a run's client closing leaves the batch's engine serving the others
        assert thread.is_alive()
        engine = weakref.ref(first.engine)
    assert not thread.is_alive()
    with pytest.raises(EngineStoppedError):  # a client kept past its batch is told so
        second.engine.generate("hello")
    del first, second
    assert engine() is None
