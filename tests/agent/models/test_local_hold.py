"""The in-process engine is told, like `harness serve`, that a run comes back after its tools."""

import pytest

from agent.models.local import LocalModel
from core.policy import ModelParams
from core.types import Message

pytestmark = pytest.mark.model


def test_a_local_run_holds_its_prefix_for_its_tool_timeout():
    from engine import Engine, EngineConfig

    engine = Engine(None, EngineConfig(kv_cache_bytes=64 << 20))
    try:
        model = LocalModel(engine=engine, return_within_s=45.0)
        params = ModelParams(max_tokens=4, temperature=0.0)
        model.complete([Message(role="user", text="Name a colour. " * 8)], [], params)
        assert engine.stats()["held_sessions"] == 1 and engine.stats()["held_blocks"] > 0
        assert set(engine.radix.holds) == {model.hint.session}
        plain = LocalModel(engine=engine)  # no timeout given: nothing held for it
        plain.complete([Message(role="user", text="Name a shape. " * 8)], [], params)
        assert engine.stats()["held_sessions"] == 1
    finally:
        engine.shutdown()
