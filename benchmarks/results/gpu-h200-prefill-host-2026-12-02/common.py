"""What the scripts beside this file share: a CUDA timer, and a wrapper that records a call's
host time and start."""

import time

import torch


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
