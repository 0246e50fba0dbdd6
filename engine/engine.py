"""The Engine: load a model, accept requests, run the step loop, report results.

    engine = Engine()                                   # the embedded SmolLM2-135M-Instruct
    outs = engine.generate(["Hello"], SamplingParams(temperature=0, max_tokens=32))
    async for chunk in engine.stream(prompt, params):  # from any asyncio loop
        print(chunk.delta, end="")

One background thread owns the model and the scheduler: it loads the weights, then
runs `step()` while there is work; every request is a `Sequence` the scheduler batches
with the others (continuous batching). Other threads never touch either: `submit`,
`generate`, `abort` and `prompt_logits` put their change in an inbox the loop drains
before each step, so a caller waits for a short lock, never for a step (a lock held
across steps starves callers: the loop thread takes it back before a waiter wakes).

All torch work stays on that one thread because torch's OpenMP runtime gives every
thread that runs parallel ops its own worker team, and once the teams together hold
more threads than there are cores its workers stop spin-waiting between the hundreds
of small parallel regions of a decode step: on the 2-core box this engine was tuned
on, a step ran 1.5-2x slower as soon as a second thread had run a parallel torch op.
A program embedding the engine should keep its own torch work off other threads
when it measures speed.
`generate` blocks on per-request events; `stream` receives per-request updates
through an asyncio queue fed thread-safely from the loop. A bad request raises an
`EngineError` at submission and never reaches the loop; an exception inside the model
fails only the requests of that step, and one in the engine's own bookkeeping fails
the requests queued at the time; either way the loop goes on serving.
"""

import asyncio
import atexit
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.backend import make_runner
from engine.config import EngineConfig
from engine.errors import ContextLengthError, EngineError, EngineStoppedError, InvalidRequestError
from engine.kv_cache import BlockPool, allocate_kv_cache
from engine.model import Model
from engine.radix import RadixCache
from engine.sampler import SamplingParams, apply_processors, make_generator, sample
from engine.scheduler import Scheduler
from engine.sequence import Sequence, Status
from engine.tokenizer import Tokenizer
from engine.weights import Checkpoint, default_model_path, load_checkpoint

log = logging.getLogger("engine")


@dataclass
class Usage:
    prompt_tokens: int
    cached_tokens: int  # prompt tokens served from the prefix cache (block-floored, < prompt_tokens)
    completion_tokens: int


@dataclass
class RequestOutput:
    request_id: str
    text: str
    token_ids: list[int]  # completion tokens (a final EOS/stop token included)
    finish_reason: str | None  # "stop" | "length" | "abort" | "error"; None while running
    usage: Usage
    num_preemptions: int = 0
    ttft_s: float | None = None  # submission to first token
    latency_s: float | None = None  # submission to finish
    error: str | None = None


@dataclass
class StreamChunk:
    delta: str  # new text since the previous chunk
    token_ids: list[int]  # new token ids since the previous chunk
    finished: bool
    output: RequestOutput  # the request's state after this chunk


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
class _Handle:
    seq: Sequence
    on_update: Callable[[Sequence, list[int]], None] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    sent_tokens: int = 0


class Engine:
    def __init__(self, model: str | Path | Checkpoint | None = None, config: EngineConfig | None = None):
        self.config = config or EngineConfig()
        self.step_stats: deque[StepStats] = deque(maxlen=self.config.step_stats_history)
        self.num_steps = 0
        self.max_batch_seqs = 0  # the most sequences ever batched in one step
        self._handles: dict[str, _Handle] = {}
        self._ids = itertools.count()
        self._arrivals = itertools.count()
        self._inbox: list[Callable[[], None]] = []  # changes for the loop thread to apply
        self._work = threading.Condition()  # guards the inbox and _stopped
        self._lock = threading.Lock()  # held by the loop thread around each step
        self._stopped = False
        loaded: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(model, loaded), name="engine-loop", daemon=True)
        self._thread.start()
        loaded.result()  # a bad model file raises here, in the caller's thread
        # Stop the loop before interpreter teardown pulls torch out from under it.
        ref = weakref.ref(self)
        atexit.register(lambda: (e := ref()) is not None and e.shutdown())

    def _run(self, model: str | Path | Checkpoint | None, loaded: Future) -> None:
        torch.set_grad_enabled(False)
        if self.config.num_threads:
            torch.set_num_threads(self.config.num_threads)
        try:
            self._load(model)
        except BaseException as e:
            self._stopped = True
            loaded.set_exception(e)
            return
        loaded.set_result(None)
        self._loop()

    def _load(self, model: str | Path | Checkpoint | None) -> None:
        t0 = time.perf_counter()
        ckpt = model if isinstance(model, Checkpoint) else load_checkpoint(model or default_model_path())
        self.model_path = ckpt.path
        self.model_config = ckpt.config
        self.tokenizer: Tokenizer | None = Tokenizer.from_checkpoint(ckpt)
        self.max_model_len = min(self.config.max_model_len or ckpt.config.max_position_embeddings, ckpt.config.max_position_embeddings)
        if torch.device(self.config.device).type == "cuda":
            from engine.cuda.model import CudaModel  # Triton is imported only where a GPU is used

            self.model = CudaModel(ckpt, self.config.device, max_len=self.max_model_len)
        else:
            int4 = self.config.weights == "int4"
            self.model = Model(
                ckpt, self.config.device, torch.bfloat16 if int4 else torch.float32, self.max_model_len,
                self.config.use_onednn, int4,
            )
        del ckpt
        self.kv = allocate_kv_cache(self.model_config, self.config, self.model.dtype)
        self.runner = make_runner(self.model, self.kv, self.config, self.max_model_len)
        self.pool = BlockPool(self.kv.num_blocks)
        self.radix = RadixCache(self.pool, self.config.block_size) if self.config.enable_prefix_cache else None
        self.scheduler = Scheduler(self.config, self.pool, self.radix)
        self.eos_ids = set(self.model_config.eos_token_ids)
        log.info(
            "engine ready: %s, %d layers, KV %d bytes/token, %d blocks, max_model_len %d, loaded in %.1fs",
            self.model_path or "dummy weights", self.model_config.num_layers, self.kv.bytes_per_token,
            self.kv.num_blocks, self.max_model_len, time.perf_counter() - t0,
        )

    # ------------------------------------------------------------ requests

    def encode(self, prompt: str | list[int]) -> list[int]:
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise InvalidRequestError("this model has no tokenizer (dummy weights or no tokenizer.json); pass token ids")
            return self.tokenizer.encode(prompt)
        return list(prompt)

    def encode_chat(self, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
        if self.tokenizer is None:
            raise InvalidRequestError("this model has no tokenizer (dummy weights or no tokenizer.json); pass token ids")
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

    def _post(self, change: Callable[[], None], handles: list[_Handle] = ()) -> bool:
        """Queue a change for the loop thread, registering the requests it brings in the same
        critical section (so a shutdown either sees them or refuses them); False when shut down."""
        with self._work:
            if self._stopped:
                return False
            for h in handles:
                h.seq.arrival = next(self._arrivals)
                self._handles[h.seq.request_id] = h
            self._inbox.append(change)
            self._work.notify()
        return True

    def _on_loop(self, fn: Callable[[], object]) -> object:
        """Run fn on the loop thread between two steps and return its result (or raise its error)."""
        result: Future = Future()

        def change() -> None:
            try:
                result.set_result(fn())
            except BaseException as e:
                result.set_exception(e)

        if not self._post(change):
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
            token_ids=list(seq.output_ids),
            finish_reason=seq.finish_reason,
            usage=Usage(seq.prompt_len, seq.cached_tokens or 0, len(seq.output_ids)),
            num_preemptions=seq.num_preemptions,
            ttft_s=None if seq.first_token_time is None else seq.first_token_time - seq.arrival_time,
            latency_s=None if done is None else done - seq.arrival_time,
            error=None if seq.error is None else f"{type(seq.error).__name__}: {seq.error}",
        )

    def _pop_output(self, handle: _Handle) -> RequestOutput:
        self._handles.pop(handle.seq.request_id, None)
        return self._output(handle.seq)

    def _chunk(self, seq: Sequence, new_ids: list[int]) -> StreamChunk:
        finished = seq.status is Status.FINISHED
        safe = len(seq.text) if finished else self._safe_text_end(seq)
        delta = seq.text[seq.emitted_chars : safe] if safe > seq.emitted_chars else ""
        seq.emitted_chars = max(seq.emitted_chars, safe)
        return StreamChunk(delta, new_ids, finished, self._output(seq))

    @staticmethod
    def _safe_text_end(seq: Sequence) -> int:
        """Hold back text that may yet turn out to start a stop string, or be half a UTF-8 character."""
        end = len(seq.text)
        while end and seq.text[end - 1] == "\ufffd":
            end -= 1
        hold = max((len(s) - 1 for s in seq.params.stop), default=0)
        return max(0, end - hold)

    # ------------------------------------------------------------ the loop

    def _loop(self) -> None:
        while True:
            with self._work:
                while not self._inbox and not self.scheduler.has_work() and not self._stopped:
                    self._work.wait()
                if self._stopped:
                    return
                changes, self._inbox = self._inbox, []
            with self._lock:
                for change in changes:
                    try:
                        change()
                    except Exception:  # a change that fails must not take the loop down with it
                        log.exception("engine: applying a queued change failed")
                try:
                    self.step()
                except Exception as e:  # outside the model (scheduling, bookkeeping): fail what was queued
                    log.exception("engine step failed outside the model; failing every queued request")
                    self._fail_all(e, "error")

    def _fail_all(self, error: Exception, reason: str) -> None:
        """Finish every unfinished request with `error`; the engine keeps serving new ones."""
        for handle in list(self._handles.values()):
            if handle.seq.status is not Status.FINISHED:
                handle.seq.error = error
                self.scheduler.finish(handle.seq, reason)
                self._notify(handle, [])

    def shutdown(self) -> None:
        with self._work:
            self._stopped = True
            self._inbox.clear()
            self._work.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        with self._lock:
            self._fail_all(EngineStoppedError("the engine was shut down"), "abort")

    def step(self) -> StepStats | None:
        """Schedule, run the model once, sample, and update every scheduled request.
        Called by the loop thread with `_lock` held."""
        t0 = time.perf_counter()
        batch = self.scheduler.schedule()
        if not batch:
            return None
        try:
            inputs = self.runner.prepare(batch.items)
            logits = self.runner.run(inputs)
            if logits.is_cuda and any(s.params.logits_processor or not s.params.greedy for s in inputs.sample_seqs):
                logits = logits.cpu()  # processors and the seeded generators work on host tensors
            for seq, n in batch.items:
                seq.num_computed += n
                self.scheduler.share_computed(seq)
            seqs = inputs.sample_seqs
            logits, failed = apply_processors(logits, [s.params for s in seqs], [s.output_ids for s in seqs])
            for i, err in failed.items():  # a processor raised: fail that request alone
                log.warning("logits processor of %s failed: %r", seqs[i].request_id, err)
                seqs[i].error = err
                self.scheduler.finish(seqs[i], "error")
                self._notify(self._handles.get(seqs[i].request_id), [])
            if failed:
                keep = [i for i in range(len(seqs)) if i not in failed]
                seqs = [seqs[i] for i in keep]
                logits = logits[keep]
            new_tokens = sample(logits, [s.params for s in seqs], [s.generator for s in seqs]) if seqs else []
        except Exception as e:  # fail this step's requests, keep serving the others
            log.exception("engine step failed; failing %d requests", len(batch.items))
            for seq, _ in batch.items:
                if seq.status is Status.FINISHED:
                    continue
                seq.error = e
                self.scheduler.finish(seq, "error")
                self._notify(self._handles.get(seq.request_id), [])
            return None
        now = time.perf_counter()
        for seq, token in zip(seqs, new_tokens):
            self._append(seq, token, now)
        stats = StepStats(
            step=self.num_steps,
            num_seqs=len(batch.items),
            num_decode=sum(1 for _, n in batch.items if n == 1),
            num_prefill=sum(1 for _, n in batch.items if n != 1),
            num_tokens=sum(n for _, n in batch.items),
            num_preempted=batch.num_preempted,
            num_waiting=len(self.scheduler.waiting),
            duration_s=now - t0,
            time=time.time(),
        )
        self.num_steps += 1
        self.max_batch_seqs = max(self.max_batch_seqs, stats.num_seqs)
        self.step_stats.append(stats)
        return stats

    def _append(self, seq: Sequence, token: int, now: float) -> None:
        seq.token_ids.append(token)
        if seq.first_token_time is None:
            seq.first_token_time = now
        p = seq.params
        reason = None
        text_ids = seq.output_ids
        if (token in self.eos_ids and not p.ignore_eos) or token in p.stop_token_ids:
            reason = "stop"
            text_ids = text_ids[:-1]
        if self.tokenizer is not None:
            seq.text = self.tokenizer.decode(text_ids)
            for s in p.stop:
                # Search only where a new match can begin: near the end of the old text.
                at = seq.text.find(s, max(0, seq.emitted_chars - len(s)))
                if at != -1:
                    seq.text = seq.text[:at]
                    reason = "stop"
                    break
        if reason is None and len(seq.output_ids) >= seq.max_tokens:
            reason = "length"
        if reason is not None:
            seq.finish_time = now
            self.scheduler.finish(seq, reason)
        self._notify(self._handles.get(seq.request_id), [token])

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
            "cached_blocks": self.radix.num_nodes if self.radix else 0,
            "evicted_blocks": self.radix.num_evicted if self.radix else 0,
            "preemptions": self.scheduler.total_preemptions,
            "kv_bytes_per_token": self.kv.bytes_per_token,
            "recent_steps": recent,
        }

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
                inputs = self.runner.prepare([(s, len(s.token_ids)) for s in seqs])
                return self.runner.run(inputs, all_logits=True)
            finally:
                for s in seqs:
                    self.pool.free(s.owned_blocks)

        logits = self._on_loop(compute)
        return list(logits.split([len(p) for p in prompts]))
