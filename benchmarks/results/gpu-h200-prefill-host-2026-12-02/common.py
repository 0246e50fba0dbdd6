"""What the scripts beside this file share: a CUDA timer, a wrapper that records a call's
host time and start, and the engine whose prefill they time."""

import time

import torch

from engine import Engine, EngineConfig, dummy_checkpoint
from engine.config import ModelConfig


def timeit(fn, n=20):
    """Mean seconds of fn() over n back-to-back calls, after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) / n / 1e3


def timed(marks: dict[str, list[float]], name: str, fn):
    """fn, recording each call's host seconds under name and its start under name + " at"."""

    def wrap(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            marks.setdefault(name, []).append(time.perf_counter() - t)
            marks.setdefault(name + " at", []).append(t)

    return wrap


def prefill_engine(c: ModelConfig) -> Engine:
    """Dummy bf16 weights of shape c on the GPU, prefill chunked at 8,192 tokens a step."""
    return Engine(
        dummy_checkpoint(c, seed=0, device="cuda", dtype=torch.bfloat16),
        EngineConfig(
            device="cuda", kv_cache_bytes=40 << 30, max_num_seqs=128, max_num_batched_tokens=8192, max_model_len=4096
        ),
    )
