"""Shared fixtures: the real embedded GGUF model is loaded once for the session, and the transformers
reference only for the module that compares against it."""

import gc

import pytest
import torch

from engine import Engine, EngineConfig, load_checkpoint


@pytest.fixture(scope="session")
def checkpoint(model_weights):
    return load_checkpoint(model_weights)


@pytest.fixture(scope="session")
def engine(checkpoint):
    eng = Engine(checkpoint, EngineConfig(kv_cache_bytes=512 << 20))
    yield eng
    eng.shutdown()


def make_engine(checkpoint, **config) -> Engine:
    """A fresh engine on the already-loaded weights (about a second)."""
    return Engine(checkpoint, EngineConfig(**config))


@pytest.fixture(scope="module")
def reference(model_weights):
    """transformers loading the same GGUF file: the ground truth for logits and greedy decoding, for the one
    module that compares against it, and freed after it."""
    from transformers import AutoModelForCausalLM

    path = model_weights
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.eval()
    yield model
    del model
    gc.collect()
