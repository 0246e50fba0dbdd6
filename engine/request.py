"""The engine's requests as their callers see them: a handle per request, what a step's
results do to it, and the records handed back.

A handle is registered when its request is queued and leaves the table when its caller
has taken the output: `generate` pops it once done, a request with an update callback
(`submit`, `stream`) leaves when it finishes.
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.output import RequestOutput, StreamChunk, Usage
from engine.scheduler import Scheduler
from engine.sequence import Sequence, Status
from engine.step import Result

log = logging.getLogger("engine")


@dataclass
class Handle:
    seq: Sequence
    on_update: Callable[[Sequence, list[int]], None] | None = None
    done: threading.Event = field(default_factory=threading.Event)


def settle(handles: dict[str, Handle], scheduler: Scheduler, results: list[Result], now: float) -> None:
    """A step's results: each failed request finishes with its error, each other sequence takes
    its token (which may finish it), and every caller concerned is told."""
    seqs, tokens = [], []
    for seq, result in results:
        if isinstance(result, Exception):
            fail(handles, scheduler, seq, result)
        else:
            seqs.append(seq)
            tokens.append(result)
    scheduler.postprocess(seqs, tokens, now)
    for seq, token in zip(seqs, tokens):
        notify(handles, handles.get(seq.request_id), [token])


def fail(
    handles: dict[str, Handle], scheduler: Scheduler, seq: Sequence, error: Exception, reason: str = "error"
) -> None:
    if seq.status is Status.FINISHED:
        return
    seq.error = error
    scheduler.finish(seq, reason)
    notify(handles, handles.get(seq.request_id), [])


def fail_all(handles: dict[str, Handle], scheduler: Scheduler, error: Exception, reason: str) -> None:
    """Finish every unfinished request with `error`; the engine keeps serving new ones."""
    for handle in list(handles.values()):
        fail(handles, scheduler, handle.seq, error, reason)


def notify(handles: dict[str, Handle], handle: Handle | None, new_ids: list[int]) -> None:
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
        handles.pop(handle.seq.request_id, None)


def request_output(seq: Sequence) -> RequestOutput:
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


def stream_chunk(seq: Sequence, new_ids: list[int]) -> StreamChunk:
    finished = seq.status is Status.FINISHED
    delta = seq.output.stream_delta(finished) if seq.output is not None else ""
    return StreamChunk(delta, new_ids, finished, request_output(seq))
