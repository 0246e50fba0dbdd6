"""The Engine: load a model, take requests, hand back their results.

    engine = Engine()                                   # the embedded SmolLM2-135M-Instruct
    outs = engine.generate(["Hello"], SamplingParams(temperature=0, max_tokens=32))
    async for chunk in engine.stream(prompt, params):  # from any asyncio loop
        print(chunk.delta, end="")

One background thread (engine/loop.py) owns the model and the scheduler: it loads
the weights, then runs `step()` (engine/step.py) while there is work; every request is
a `Sequence` the scheduler batches with the others (continuous batching). `submit`,
`generate`, `abort` and `prompt_logits` put their change in the loop's inbox. A program
embedding the engine should keep its own torch work off other threads when it measures
speed (loop.py says why).

`generate` blocks on per-request events; `stream` receives per-request updates
through an asyncio queue fed thread-safely from the loop (engine/request.py). Text is
built incrementally (engine/output.py). A bad request raises an `EngineError` at
submission and never reaches the loop. A step's failure reaches only the requests it
belongs to (engine/step.py); one in the engine's own bookkeeping fails the requests
queued at the time. Either way the loop goes on serving.
"""

import asyncio
import atexit
import itertools
import logging
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import torch

from engine.backend import make_runner
from engine.config import EngineConfig
from engine.errors import ContextLengthError, EngineError, EngineStoppedError, InvalidRequestError
from engine.heap import give_back_heap
from engine.kv_cache import BlockPool, allocate_kv_cache
from engine.linear import int4_dtype
from engine.loop import Loop
from engine.model import Model
from engine.output import RequestOutput, StreamChunk, TextOutput
from engine.radix import RadixCache
from engine.request import Handle, fail_all, notify, request_output, settle, stream_chunk
from engine.sampler import SamplingParams, make_generator
from engine.scheduler import Scheduler
from engine.sequence import ReturnHint, Sequence, Status
from engine.step import Ahead, StepStats, next_work, prefill_logits, run, step_stats
from engine.tokenizer import Tokenizer
from engine.weights import Checkpoint, default_model_path, load_checkpoint

if TYPE_CHECKING:
    from engine.cuda.model import CudaModel  # for annotations: importing it needs Triton

log = logging.getLogger("engine")

T = TypeVar("T")


class Engine:
    model: "Model | CudaModel"  # loaded on the loop thread (_load)

    def __init__(self, model: str | Path | Checkpoint | None = None, config: EngineConfig | None = None):
        self.config = config or EngineConfig()
        self.step_stats: deque[StepStats] = deque(maxlen=self.config.step_stats_history)
        self.num_steps = 0
        self.max_batch_seqs = 0  # the most sequences ever batched in one step
        self._handles: dict[str, Handle] = {}
        self._ids = itertools.count()
        self._arrivals = itertools.count()
        self._ahead: Ahead | None = None  # the decode step running ahead of the one being read
        self.loop = Loop()
        # A bad model file raises here, in the caller's thread.
        self.loop.start(lambda: self._load(model), self.step, lambda: self.scheduler.has_work(), self._on_step_error)
        # Stop the loop before interpreter teardown pulls torch out from under it.
        ref = weakref.ref(self)

        def shutdown_at_exit() -> None:
            engine = ref()
            if engine is not None:
                engine.shutdown()

        self._at_exit = shutdown_at_exit
        atexit.register(shutdown_at_exit)

    def _load(self, model: str | Path | Checkpoint | None) -> None:
        """Runs on the loop thread: torch settings are per thread."""
        torch.set_grad_enabled(False)
        if self.config.num_threads:
            torch.set_num_threads(self.config.num_threads)
        if torch.device(self.config.device).type == "cuda" and not torch.cuda.is_available():
            raise EngineError(f"device {self.config.device!r} was asked for, but torch sees no CUDA GPU here")
        t0 = time.perf_counter()
        ckpt = model if isinstance(model, Checkpoint) else load_checkpoint(model or default_model_path())
        self.model_path = ckpt.path
        self.model_config = ckpt.config
        self.tokenizer: Tokenizer | None = Tokenizer.from_checkpoint(ckpt)
        self.max_model_len = min(
            self.config.max_model_len or ckpt.config.max_position_embeddings, ckpt.config.max_position_embeddings
        )
        if torch.device(self.config.device).type == "cuda":
            # Triton is imported only where a GPU is used.
            from engine.cuda.model import CudaModel

            self.model = CudaModel(ckpt, self.config.device, max_len=self.max_model_len)
        else:
            int4 = self.config.weights == "int4"
            self.model = Model(
                ckpt,
                self.config.device,
                int4_dtype() if int4 else torch.float32,
                self.max_model_len,
                self.config.use_onednn,
                int4,
            )
        del ckpt
        # 4-bit weights keep a bfloat16 cache whatever their activations: half the bytes of float32.
        kv_dtype = torch.bfloat16 if self.config.weights == "int4" else self.model.dtype
        self.kv = allocate_kv_cache(self.model_config, self.config, kv_dtype)
        self.runner = make_runner(self.model, self.kv, self.config, self.max_model_len)
        self.pool = BlockPool(self.kv.num_blocks)
        self.radix = RadixCache(self.pool, self.config.block_size) if self.config.enable_prefix_cache else None
        self.eos_ids = frozenset(self.model_config.eos_token_ids)
        self.scheduler = Scheduler(self.config, self.pool, self.radix, self.eos_ids)
        log.info(
            "engine ready: %s, %d layers, KV %d bytes/token, %d blocks, max_model_len %d, loaded in %.1fs",
            self.model_path or "dummy weights",
            self.model_config.num_layers,
            self.kv.bytes_per_token,
            self.kv.num_blocks,
            self.max_model_len,
            time.perf_counter() - t0,
        )

    # ------------------------------------------------------------ requests

    @property
    def context_window(self) -> int:
        """The most tokens one request may hold, prompt and reply: max_model_len, or the KV cache if smaller."""
        return min(self.max_model_len, self.kv.num_blocks * self.config.block_size)

    def encode(self, prompt: str | list[int]) -> list[int]:
        """A raw prompt is the caller's own text: special-token text in it becomes special
        tokens. Conversations go through `encode_chat`, which keeps message text plain."""
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise InvalidRequestError(
                    "this model has no tokenizer (dummy weights or no tokenizer.json); pass token ids"
                )
            return self.tokenizer.encode(prompt)
        return list(prompt)

    def encode_chat(
        self, messages: list[dict], tools: list[dict] | None = None, continue_final: bool = False
    ) -> list[int]:
        if self.tokenizer is None:
            raise InvalidRequestError(
                "this model has no tokenizer (dummy weights or no tokenizer.json); pass token ids"
            )
        return self.tokenizer.encode_chat(messages, tools, continue_final=continue_final)

    def _make_sequence(
        self, prompt: str | list[int], params: SamplingParams, request_id: str | None, hint: ReturnHint | None
    ) -> Sequence:
        if self.loop.stopped:  # its KV cache is gone: say so before measuring the prompt against it
            raise EngineStoppedError("the engine is shut down; create a new Engine")
        if not isinstance(params, SamplingParams):
            raise InvalidRequestError(f"params must be SamplingParams, got {type(params).__name__}")
        params.validate()
        check_hint(hint)
        ids = self.encode(prompt)
        if not ids:
            raise InvalidRequestError("the prompt is empty; send at least one token")
        vocab = self.model_config.vocab_size
        if any(not isinstance(t, int) or t < 0 or t >= vocab for t in ids):
            raise InvalidRequestError(f"prompt token ids must be integers in [0, {vocab})")
        capacity = self.context_window
        if len(ids) >= capacity:
            raise ContextLengthError(
                f"the prompt has {len(ids)} tokens but the context window holds {capacity} "
                f"(max_model_len {self.max_model_len}, KV cache {self.kv.num_blocks * self.config.block_size} tokens); "
                "shorten the prompt or raise max_model_len / kv_cache_bytes",
                len(ids),
                capacity,
            )
        rid = request_id or f"req-{next(self._ids)}"
        if rid in self._handles:
            raise InvalidRequestError(f"request id {rid!r} is already in use")
        seq = Sequence(rid, ids, len(ids), params, 0, make_generator(params.seed), hint=hint)
        seq.max_tokens = min(params.max_tokens, capacity - len(ids))
        if self.tokenizer is not None:
            seq.output = TextOutput(self.tokenizer, params.stop)
        seq.arrival_time = time.perf_counter()
        return seq

    def submit(
        self,
        prompt: str | list[int],
        params: SamplingParams | None = None,
        request_id: str | None = None,
        on_update: Callable[[Sequence, list[int]], None] | None = None,
        hint: ReturnHint | None = None,
    ) -> str:
        """Queue a request; returns its id. Raises EngineError subclasses for bad input."""
        seq = self._make_sequence(prompt, params or SamplingParams(), request_id, hint)
        handle = Handle(seq, on_update)
        self._enqueue([handle])
        return seq.request_id

    def abort(self, request_id: str) -> None:
        """Stop a request; it finishes with reason "abort" before the next step."""
        handle = self._handles.get(request_id)
        if handle is None:
            return

        def apply() -> None:
            if handle.seq.status is not Status.FINISHED:
                self.scheduler.finish(handle.seq, "abort")
                notify(self._handles, handle, [])

        self._post(apply)

    def _enqueue(self, handles: list[Handle]) -> None:
        def apply() -> None:
            for h in handles:
                if h.seq.status is not Status.FINISHED:  # not failed while it waited in the inbox
                    self.scheduler.add(h.seq)

        if not self._post(apply, handles):
            raise EngineStoppedError("the engine is shut down; create a new Engine")

    def _post(self, change: Callable[[], None], handles: Iterable[Handle] = ()) -> bool:
        """Queue a change for the loop thread, registering the requests it brings in the same
        critical section (so a shutdown either sees them or refuses them); False when shut down."""

        def register() -> None:
            for h in handles:
                h.seq.arrival = next(self._arrivals)
                self._handles[h.seq.request_id] = h

        return self.loop.post(change, register)

    def _on_loop(self, fn: Callable[[], T]) -> T:
        """Run fn on the loop thread between two steps and return its result (or raise its error)."""
        posted, result = self.loop.call(fn)
        if not posted:
            raise EngineStoppedError("the engine is shut down; create a new Engine")
        return result.result()

    def generate(
        self,
        prompts: list[str | list[int]] | str,
        params: SamplingParams | list[SamplingParams] | None = None,
        hint: ReturnHint | None = None,
    ) -> list[RequestOutput]:
        """Run a batch of prompts to completion (they are batched with each other and with
        any other traffic) and return their outputs in order. A hint applies to each prompt."""
        if isinstance(prompts, str):
            prompts = [prompts]
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(prompts)
        if len(params) != len(prompts):
            raise InvalidRequestError(f"{len(prompts)} prompts but {len(params)} SamplingParams")
        # Validate every prompt before queueing any, so a bad one leaves nothing behind.
        seqs = [self._make_sequence(p, sp, None, hint) for p, sp in zip(prompts, params)]
        handles = [Handle(s) for s in seqs]
        self._enqueue(handles)
        for h in handles:
            h.done.wait()
        return [self._pop_output(h) for h in handles]

    async def stream(
        self,
        prompt: str | list[int],
        params: SamplingParams | None = None,
        request_id: str | None = None,
        hint: ReturnHint | None = None,
    ) -> AsyncIterator[StreamChunk]:
        """Yield chunks of one request as they are generated. Cancelling the consumer aborts it."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def on_update(seq: Sequence, new_ids: list[int]) -> None:
            chunk = stream_chunk(seq, new_ids)
            try:
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            except RuntimeError:  # the consumer's loop has closed; the abort below is on its way
                pass

        rid = self.submit(prompt, params, request_id, on_update, hint)
        finished = False
        try:
            while True:
                chunk = await queue.get()
                finished = chunk.finished
                yield chunk
                if finished:
                    return
        finally:
            if not finished:
                self.abort(rid)
            self._handles.pop(rid, None)

    def _pop_output(self, handle: Handle) -> RequestOutput:
        self._handles.pop(handle.seq.request_id, None)
        return request_output(handle.seq)

    # ------------------------------------------------------------ the loop

    def _on_step_error(self, error: Exception) -> None:
        # Outside the model (scheduling, bookkeeping): fail what was queued, keep serving.
        log.error("engine step failed outside the model; failing every queued request", exc_info=error)
        fail_all(self._handles, self.scheduler, error, "error")

    def shutdown(self) -> None:
        """Stop the loop thread, fail every request still queued, free the weights and the KV cache and give
        the heap they held back to the OS (engine/heap.py): an engine something still refers to (a client, a
        server's state) holds no memory of note afterwards. It serves nothing more; a second call does nothing."""
        self.loop.stop()
        atexit.unregister(self._at_exit)
        with self.loop.lock:
            fail_all(self._handles, self.scheduler, EngineStoppedError("the engine was shut down"), "abort")
            if hasattr(self, "runner"):
                del self.runner, self.model, self.kv
                self._ahead = None
                give_back_heap()

    def step(self) -> StepStats | None:
        """Schedule, run the model once, sample, and update every scheduled request.
        Called by the loop thread with the loop's lock held."""
        t0 = time.perf_counter()
        ahead, self._ahead = self._ahead, None
        work = next_work(self.scheduler, ahead)
        if work is None:
            return None
        results, self._ahead = run(work, self.runner, self.scheduler)
        now = time.perf_counter()
        settle(self._handles, self.scheduler, results, now)
        stats = step_stats(self.num_steps, work, len(self.scheduler.waiting), now - t0)
        self.num_steps += 1
        self.max_batch_seqs = max(self.max_batch_seqs, stats.num_seqs)
        self.step_stats.append(stats)
        return stats

    # ------------------------------------------------------------ tools for tests and servers

    def stats(self) -> dict:
        """A snapshot a server can expose: cache occupancy and batching history. Read
        without the step lock (each read is atomic under the GIL), so a metrics scrape never
        waits for a step; figures may straddle a step boundary."""
        recent = list(self.step_stats)
        return {
            "num_steps": self.num_steps,
            "max_batch_seqs": self.max_batch_seqs,
            "running": len(self.scheduler.running),
            "waiting": len(self.scheduler.waiting),
            "free_blocks": self.pool.num_free,
            "total_blocks": self.pool.num_blocks,
            "block_size": self.config.block_size,
            "cached_blocks": self.radix.num_nodes if self.radix else 0,
            "evicted_blocks": self.radix.num_evicted if self.radix else 0,
            "held_blocks": self.radix.num_held if self.radix else 0,
            "held_sessions": len(self.radix.holds) if self.radix else 0,
            "held_evicted_blocks": self.radix.num_held_evicted if self.radix else 0,
            "queued_evicted_blocks": self.radix.num_queued_evicted if self.radix else 0,
            "saved_hit_blocks": self.radix.num_saved_hits if self.radix else 0,
            "preemptions": self.scheduler.total_preemptions,
            "kv_bytes_per_token": self.kv.bytes_per_token,
            "recent_steps": recent,
        }

    def reset_prefix_cache(self) -> int:
        """Forget every cached prefix that no running request holds, so that what runs next starts
        on a cold cache (a study gives each policy its own); returns the blocks freed."""
        return self._on_loop(lambda: self.radix.clear() if self.radix else 0)

    def prompt_logits(self, prompts: list[list[int]]) -> list[torch.Tensor]:
        """Logits at every position of each prompt, computed in one batched prefill through
        the paged cache (no prefix cache, nothing kept). For checking the model itself."""
        logits = self._on_loop(lambda: prefill_logits(prompts, self.runner, self.scheduler))
        return list(logits.split([len(p) for p in prompts]))


MAX_RETURN_S = 24 * 3600.0


def check_hint(hint: ReturnHint | None) -> None:
    if hint is None:
        return
    if not isinstance(hint, ReturnHint):
        raise InvalidRequestError(f"hint must be a ReturnHint, got {type(hint).__name__}")
    if not isinstance(hint.session, str) or not hint.session or len(hint.session) > 256:
        raise InvalidRequestError("a return hint's session key must be a non-empty string of at most 256 characters")
    if not isinstance(hint.within_s, int | float) or not 0 < hint.within_s <= MAX_RETURN_S:
        raise InvalidRequestError(
            f"a return hint's within_s must be a number of seconds in (0, {MAX_RETURN_S:.0f}], got {hint.within_s!r}"
        )
