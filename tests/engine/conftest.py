"""Shared, session-scoped fixtures: the real embedded GGUF model is loaded once, and
the transformers reference only by the tests that compare against it."""

import pytest
import torch

from engine import Engine, EngineConfig, default_model_path, load_checkpoint


@pytest.fixture(scope="session", autouse=True)
def _threads():
    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def checkpoint():
    return load_checkpoint(default_model_path())


@pytest.fixture(scope="session")
def engine(checkpoint):
    eng = Engine(checkpoint, EngineConfig(kv_cache_bytes=512 << 20))
    yield eng
    eng.shutdown()


def make_engine(checkpoint, **config) -> Engine:
    """A fresh engine on the already-loaded weights (about a second)."""
    return Engine(checkpoint, EngineConfig(**config))


@pytest.fixture(scope="session")
def reference():
    """transformers loading the same GGUF file: the ground truth for logits and greedy decoding."""
    from transformers import AutoModelForCausalLM

    path = default_model_path()
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.eval()
    return model
