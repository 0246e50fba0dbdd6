"""The Engine: load a model, accept requests, run the step loop, report results.

    engine = Engine()                                   # the embedded SmolLM2-135M-Instruct
    outs = engine.generate(["Hello"], SamplingParams(temperature=0, max_tokens=32))
    async for chunk in engine.stream(prompt, params):  # from any asyncio loop
        print(chunk.delta, end="")

One background thread (engine/loop.py) owns the model and the scheduler: it loads
the weights, then runs `step()` while there is work; every request is a `Sequence` the
scheduler batches with the others (continuous batching). `submit`, `generate`, `abort`
and `prompt_logits` put their change in the loop's inbox. A program embedding the
engine should keep its own torch work off other threads when it measures speed
(loop.py says why).

On the CUDA path a greedy decode step launches the next one before the host reads its
tokens (`_decode_ahead`), so the host's bookkeeping overlaps the GPU's work.

`generate` blocks on per-request events; `stream` receives per-request updates
through an asyncio queue fed thread-safely from the loop. Text is built incrementally
(engine/output.py). A bad request raises an `EngineError` at submission and never
reaches the loop. Inside a step, a row that cannot be sampled or whose logits
processor raises fails only its own request; an exception in the model itself makes
each sequence of that step run alone, so it fails only the requests it belongs to;
one in the engine's own bookkeeping fails the requests queued at the time. Either way
the loop goes on serving.
"""

import asyncio
import atexit
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import torch

from engine.backend import make_runner
from engine.batch import Launched, flatten, flatten_next
from engine.config import EngineConfig
from engine.errors import (
    ContextLengthError,
    EngineError,
    EngineStoppedError,
    InvalidRequestError,
)
from engine.kv_cache import BlockPool, allocate_kv_cache
from engine.linear import int4_dtype
from engine.loop import Loop
from engine.model import Model
from engine.output import RequestOutput, StreamChunk, TextOutput, Usage
from engine.radix import RadixCache
from engine.sampler import SamplingParams, apply_processors, make_generator, sample
from engine.scheduler import Scheduler
from engine.sequence import Sequence, Status
from engine.tokenizer import Tokenizer
from engine.weights import Checkpoint, default_model_path, load_checkpoint

if TYPE_CHECKING:
    from engine.cuda.model import CudaModel  # for annotations: importing it needs Triton

log = logging.getLogger("engine")

T = TypeVar("T")


@dataclass
class StepStats:
    step: int
    num_seqs: int  # sequences batched in this step
    num_decode: int  # of which single-token (decode) queries
    num_prefill: int  # of which prompt chunks
    num_tokens: int  # tokens computed
    num_preempted: int
    num_waiting: int
    duration_s: float
    time: float  # wall-clock end of the step


@dataclass
class _Ahead:
    """A greedy decode step the GPU runs while the host has not read its tokens yet."""

    seqs: list[Sequence]  # in row order
    launched: Launched


@dataclass
class _Handle:
    seq: Sequence
    on_update: Callable[[Sequence, list[int]], None] | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Engine:
    model: "Model | CudaModel"  # loaded on the loop thread (_load)

    def __init__(self, model: str | Path | Checkpoint | None = None, config: EngineConfig | None = None):
        self.config = config or EngineConfig()
        self.step_stats: deque[StepStats] = deque(maxlen=self.config.step_stats_history)
        self.num_steps = 0
        self.max_batch_seqs = 0  # the most sequences ever batched in one step
        self._handles: dict[str, _Handle] = {}
        self._ids = itertools.count()
        self._arrivals = itertools.count()
        self._ahead: _Ahead | None = None  # the decode step running ahead of the one being read
        self.loop = Loop(self.step, lambda: self.scheduler.has_work(), self._on_step_error)
        self.loop.start(lambda: self._load(model))  # a bad model file raises here, in the caller's thread
        # Stop the loop before interpreter teardown pulls torch out from under it.
        ref = weakref.ref(self)

        def shutdown_at_exit() -> None:
            engine = ref()
            if engine is not None:
                engine.shutdown()

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

    def encode_chat(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        if self.tokenizer is None:
            raise InvalidRequestError(
                "this model has no tokenizer (dummy weights or no tokenizer.json); pass token ids"
            )
        return self.tokenizer.encode_chat(messages, tools)

    def _make_sequence(self, prompt: str | list[int], params: SamplingParams, request_id: str | None) -> Sequence:
        if not isinstance(params, SamplingParams):
            raise InvalidRequestError(f"params must be SamplingParams, got {type(params).__name__}")
        params.validate()
        ids = self.encode(prompt)
        if not ids:
            raise InvalidRequestError("the prompt is empty; send at least one token")
        vocab = self.model_config.vocab_size
        if any(not isinstance(t, int) or t < 0 or t >= vocab for t in ids):
            raise InvalidRequestError(f"prompt token ids must be integers in [0, {vocab})")
        capacity = min(self.max_model_len, self.kv.num_blocks * self.config.block_size)
        if len(ids) >= capacity:
            raise ContextLengthError(
                f"the prompt has {len(ids)} tokens but the context window holds {capacity} "
                f"(max_model_len {self.max_model_len}, KV cache {self.kv.num_blocks * self.config.block_size} tokens); "
                "shorten the prompt or raise max_model_len / kv_cache_bytes"
            )
        rid = request_id or f"req-{next(self._ids)}"
        if rid in self._handles:
            raise InvalidRequestError(f"request id {rid!r} is already in use")
        seq = Sequence(rid, ids, len(ids), params, 0, make_generator(params.seed))
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
    ) -> str:
        """Queue a request; returns its id. Raises EngineError subclasses for bad input."""
        seq = self._make_sequence(prompt, params or SamplingParams(), request_id)
        handle = _Handle(seq, on_update)
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
                self._notify(handle, [])

        self._post(apply)

    def _enqueue(self, handles: list[_Handle]) -> None:
        def apply() -> None:
            for h in handles:
                if h.seq.status is not Status.FINISHED:  # not failed while it waited in the inbox
                    self.scheduler.add(h.seq)

        if not self._post(apply, handles):
            raise EngineStoppedError("the engine is shut down; create a new Engine")

    def _post(self, change: Callable[[], None], handles: Iterable[_Handle] = ()) -> bool:
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
        self, prompts: list[str | list[int]] | str, params: SamplingParams | list[SamplingParams] | None = None
    ) -> list[RequestOutput]:
        """Run a batch of prompts to completion (they are batched with each other and with
        any other traffic) and return their outputs in order."""
        if isinstance(prompts, str):
            prompts = [prompts]
        if params is None or isinstance(params, SamplingParams):
            params = [params or SamplingParams()] * len(prompts)
        if len(params) != len(prompts):
            raise InvalidRequestError(f"{len(prompts)} prompts but {len(params)} SamplingParams")
        # Validate every prompt before queueing any, so a bad one leaves nothing behind.
        seqs = [self._make_sequence(p, sp, None) for p, sp in zip(prompts, params)]
        handles = [_Handle(s) for s in seqs]
        self._enqueue(handles)
        for h in handles:
            h.done.wait()
        return [self._pop_output(h) for h in handles]

    async def stream(
        self, prompt: str | list[int], params: SamplingParams | None = None, request_id: str | None = None
    ) -> AsyncIterator[StreamChunk]:
        """Yield chunks of one request as they are generated. Cancelling the consumer aborts it."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def on_update(seq: Sequence, new_ids: list[int]) -> None:
            chunk = self._chunk(seq, new_ids)
            try:
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            except RuntimeError:  # the consumer's loop has closed; the abort below is on its way
                pass

        rid = self.submit(prompt, params, request_id, on_update)
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

    def _output(self, seq: Sequence) -> RequestOutput:
        done = seq.finish_time
        return RequestOutput(
            request_id=seq.request_id,
            text=seq.text,
            token_ids=seq.output_ids,  # a fresh slice
            finish_reason=seq.finish_reason,
            usage=Usage(seq.prompt_len, seq.cached_tokens or 0, seq.num_output),
            num_preemptions=seq.num_preemptions,
            ttft_s=None if seq.first_token_time is None else seq.first_token_time - seq.arrival_time,
            latency_s=None if done is None else done - seq.arrival_time,
            error=None if seq.error is None else f"{type(seq.error).__name__}: {seq.error}",
            stop_sequence=None if seq.output is None else seq.output.stopped_by,
        )

    def _pop_output(self, handle: _Handle) -> RequestOutput:
        self._handles.pop(handle.seq.request_id, None)
        return self._output(handle.seq)

    def _chunk(self, seq: Sequence, new_ids: list[int]) -> StreamChunk:
        finished = seq.status is Status.FINISHED
        delta = seq.output.stream_delta(finished) if seq.output is not None else ""
        return StreamChunk(delta, new_ids, finished, self._output(seq))

    # ------------------------------------------------------------ the loop

    def _on_step_error(self, error: Exception) -> None:
        # Outside the model (scheduling, bookkeeping): fail what was queued, keep serving.
        log.error("engine step failed outside the model; failing every queued request", exc_info=error)
        self._fail_all(error, "error")

    def _fail_all(self, error: Exception, reason: str) -> None:
        """Finish every unfinished request with `error`; the engine keeps serving new ones."""
        for handle in list(self._handles.values()):
            if handle.seq.status is not Status.FINISHED:
                handle.seq.error = error
                self.scheduler.finish(handle.seq, reason)
                self._notify(handle, [])

    def shutdown(self) -> None:
        self.loop.stop()
        with self.loop.lock:
            self._fail_all(EngineStoppedError("the engine was shut down"), "abort")

    def step(self) -> StepStats | None:
        """Schedule, run the model once, sample, and update every scheduled request.
        Called by the loop thread with the loop's lock held."""
        t0 = time.perf_counter()
        ahead, self._ahead = self._ahead, None
        items = [(s, 1) for s in ahead.seqs if s.status is not Status.FINISHED] if ahead else []
        num_preempted = 0
        if not items:  # nothing runs ahead, or every request in it ended (aborted) meanwhile
            ahead = None
            batch = self.scheduler.schedule()
            if not batch:
                return None
            items, num_preempted = batch.items, batch.num_preempted
        try:
            results = self._decode_ahead(items, ahead) if ahead or self._can_run_ahead(items) else self._compute(items)
        except Exception as e:
            self._ahead = None
            results = self._compute_alone(items, e)
        seqs, tokens = [], []
        for seq, result in results:
            if isinstance(result, Exception):
                self._fail(seq, result)
            else:
                seqs.append(seq)
                tokens.append(result)
        now = time.perf_counter()
        self.scheduler.postprocess(seqs, tokens, now)
        for seq, token in zip(seqs, tokens):
            self._notify(self._handles.get(seq.request_id), [token])
        stats = StepStats(
            step=self.num_steps,
            num_seqs=len(items),
            num_decode=sum(1 for _, n in items if n == 1),
            num_prefill=sum(1 for _, n in items if n != 1),
            num_tokens=sum(n for _, n in items),
            num_preempted=num_preempted,
            num_waiting=len(self.scheduler.waiting),
            duration_s=now - t0,
            time=time.time(),
        )
        self.num_steps += 1
        self.max_batch_seqs = max(self.max_batch_seqs, stats.num_seqs)
        self.step_stats.append(stats)
        return stats

    def _can_run_ahead(self, items: list[tuple[Sequence, int]]) -> bool:
        return len(items) <= self.runner.ahead_batch and all(
            n == 1 and seq.num_uncomputed == 1 and seq.params.greedy and seq.params.logits_processor is None
            for seq, n in items
        )

    def _decode_ahead(
        self, items: list[tuple[Sequence, int]], ahead: _Ahead | None
    ) -> list[tuple[Sequence, int | Exception]]:
        """A greedy decode step with the GPU kept one step ahead of the host: the next step is
        launched from this one's tokens while they are still on the device, and this step's
        bookkeeping (stop checks, text, callbacks) runs while the next one computes.
        A request that finishes here (EOS, stop string, abort) has a row in the step already
        launched; its token there is dropped when that step is read."""
        if ahead is None:
            inputs = self.runner.prepare(flatten(items, self.config.block_size))
            ahead = _Ahead([s for s, _ in items], self.runner.launch(inputs))
        self._ahead = self._launch_next(ahead)
        tokens = ahead.launched.read()
        results: list[tuple[Sequence, int | Exception]] = []
        for seq, token in zip(ahead.seqs, tokens):
            if seq.status is not Status.FINISHED:
                seq.num_computed += 1
                self.scheduler.share_computed(seq, seq.num_computed)
                results.append((seq, token))
        return results

    def _launch_next(self, ahead: _Ahead) -> _Ahead | None:
        """Launch the step after `ahead` when it is sure to hold the same sequences: nothing
        waits to be admitted, none of them stops by length, and each has a block for its next
        token. Otherwise None, and the next step is scheduled once this one's tokens are read."""
        seqs = ahead.seqs
        if self.scheduler.waiting or len(self.scheduler.running) != len(seqs):
            return None
        if any(s.status is not Status.RUNNING or s.num_output + 1 >= s.max_tokens for s in seqs):
            return None
        if not self.scheduler.reserve_next(seqs):
            return None
        inputs = self.runner.prepare(flatten_next(seqs, self.config.block_size))
        return _Ahead(seqs, self.runner.launch(inputs, ahead.launched.ids))

    def _compute(self, items: list[tuple[Sequence, int]]) -> list[tuple[Sequence, int | Exception]]:
        """Run the model over items and sample the next token of each sequence whose span
        ends here: (sequence, token, or the error that fails that request alone)."""
        inputs = self.runner.prepare(flatten(items, self.config.block_size))
        logits = self.runner.run(inputs)
        # While the device computes: the blocks this step fills go to the prefix cache (a step
        # that reads them runs after this one). The host would otherwise do it between steps.
        for seq, n in items:
            self.scheduler.share_computed(seq, seq.num_computed + n)
        seqs = inputs.sample_seqs
        own = [s.params.logits_processor for s in seqs if s.params.logits_processor is not None]
        if logits.is_cuda and any(getattr(p, "batch", None) is None for p in own):
            logits = logits.cpu()  # a caller's own processor gets host tensors
        params = [s.params for s in seqs]
        generated = [s.output_ids if s.params.logits_processor else [] for s in seqs]
        logits, failed = apply_processors(logits, params, generated)
        keep = [i for i in range(len(seqs)) if i not in failed]
        if failed and keep:
            logits = logits[keep]
        tokens = sample(logits, [params[i] for i in keep], [seqs[i].generator for i in keep]) if keep else []
        results: dict[int, int | Exception] = dict(failed)
        results.update(zip(keep, tokens))
        for i, err in failed.items():
            log.warning("logits processor of %s failed: %r", seqs[i].request_id, err)
        for seq, n in items:
            seq.num_computed += n
        return [(seq, results[i]) for i, seq in enumerate(seqs)]

    def _compute_alone(
        self, items: list[tuple[Sequence, int]], error: Exception
    ) -> list[tuple[Sequence, int | Exception]]:
        """The step failed as a whole: run each sequence alone, so that the error reaches
        only the requests it belongs to. (K/V written by the failed attempt is written again.)"""
        log.error("engine step of %d sequences failed; running each alone", len(items), exc_info=error)
        if len(items) == 1:
            return [(items[0][0], error)]
        results: list[tuple[Sequence, int | Exception]] = []
        for item in items:
            try:
                results += self._compute([item])
            except Exception as e:
                log.error("request %s fails the model on its own", item[0].request_id, exc_info=e)
                results.append((item[0], e))
        return results

    def _fail(self, seq: Sequence, error: Exception) -> None:
        if seq.status is Status.FINISHED:
            return
        seq.error = error
        self.scheduler.finish(seq, "error")
        self._notify(self._handles.get(seq.request_id), [])

    def _notify(self, handle: _Handle | None, new_ids: list[int]) -> None:
        if handle is None:
            return
        if handle.on_update is not None:
            handle.on_update(handle.seq, new_ids)
        if handle.seq.status is Status.FINISHED:
            if handle.seq.finish_time is None:
                handle.seq.finish_time = time.perf_counter()
            handle.done.set()
            if handle.on_update is None:
                return
            self._handles.pop(handle.seq.request_id, None)

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
        bs = self.config.block_size

        def compute() -> torch.Tensor:
            seqs = []
            try:
                for i, ids in enumerate(prompts):
                    seq = Sequence(f"logits-{i}", list(ids), len(ids), SamplingParams(), -1, torch.Generator())
                    need = -(-len(ids) // bs)
                    if not self.scheduler._make_free(need):
                        raise EngineError("not enough KV blocks for these prompts; raise kv_cache_bytes")
                    seq.owned_blocks = self.pool.allocate(need)
                    seqs.append(seq)
                inputs = self.runner.prepare(flatten([(s, len(s.token_ids)) for s in seqs], bs))
                return self.runner.run(inputs, all_logits=True)
            finally:
                for s in seqs:
                    self.pool.free(s.owned_blocks)

        logits = self._on_loop(compute)
        return list(logits.split([len(p) for p in prompts]))
