"""llama.cpp on the same GGUF file, for benchmarks/bench_engine.py to print beside the engine.

Driven through llama-cpp-python's C API (an optional benchmark dependency: `pip install
llama-cpp-python`, which builds llama.cpp from source), so that both sides get the same token
ids and the same measurements: greedy decode of B sequences at once in one llama_batch (each its
own sequence id), and time to first token of a cold prompt and of one sharing its first 95%, for
which the shared prefix's KV stays in the context and only the rest is evaluated, as llama.cpp's
server does with `cache_prompt`.
"""

import importlib
import importlib.util
import time
from typing import Any

import numpy as np

# Optional: without it the benchmark prints the engine alone.
lc: Any = importlib.import_module("llama_cpp") if importlib.util.find_spec("llama_cpp") else None


class LlamaCpp:
    def __init__(self, path: str, threads: int, n_ctx: int, n_seq: int):
        lc.llama_backend_init()
        lc.llama_log_set(_QUIET, None)
        self.model = lc.llama_model_load_from_file(path.encode(), lc.llama_model_default_params())
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(self.model))
        params = lc.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, 512, 512
        params.n_seq_max, params.n_threads, params.n_threads_batch = n_seq, threads, threads
        params.kv_unified = True  # every sequence may use the whole context, as the engine's do
        self.ctx = lc.llama_init_from_model(self.model, params)
        self.batch = lc.llama_batch_init(512, 0, n_seq)

    def close(self) -> None:
        lc.llama_batch_free(self.batch)
        lc.llama_free(self.ctx)
        lc.llama_model_free(self.model)

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> list[int]:
        """Evaluate (token, position, sequence, wants logits) items; the greedy next token of each
        item that wants logits."""
        b = self.batch
        b.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, logits
            b.seq_id[i][0] = seq
        if lc.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")
        return [
            int(np.ctypeslib.as_array(lc.llama_get_logits_ith(self.ctx, i), shape=(self.vocab,)).argmax())
            for i, item in enumerate(items)
            if item[3]
        ]

    def _prefill(self, ids: list[int], start: int = 0, seq: int = 0) -> int:
        """Evaluate ids at positions start.. in chunks of the batch size; the greedy next token."""
        token = -1
        for at in range(0, len(ids), 512):
            chunk = ids[at : at + 512]
            last = at + len(chunk) == len(ids)
            out = self._decode([(t, start + at + j, seq, last and j == len(chunk) - 1) for j, t in enumerate(chunk)])
            token = out[0] if out else token
        return token

    def clear(self) -> None:
        lc.llama_memory_clear(lc.llama_get_memory(self.ctx), True)

    def decode_rate(self, prompt: list[int], batch: int, tokens: int) -> float:
        """Greedy decode of `batch` copies of prompt, `tokens` each; tokens/s after each one's first."""
        self.clear()
        first = [self._prefill(prompt, seq=s) for s in range(batch)]
        start = time.perf_counter()
        nxt, pos = first, len(prompt)
        for _ in range(tokens - 1):
            nxt = self._decode([(t, pos, s, True) for s, t in enumerate(nxt)])
            pos += 1
        return (tokens - 1) * batch / (time.perf_counter() - start)

    def ttft(self, ids: list[int], cached: int = 0) -> float:
        """Seconds to the first token of ids, with its first `cached` tokens' KV kept from before."""
        if cached:
            lc.llama_memory_seq_rm(lc.llama_get_memory(self.ctx), 0, cached, -1)
        else:
            self.clear()
        start = time.perf_counter()
        self._prefill(ids[cached:], start=cached)
        return time.perf_counter() - start


if lc is not None:
    # llama.cpp logs every load and context to stderr otherwise; kept here so it is never collected.
    _QUIET = lc.llama_log_callback(lambda level, text, data: None)
