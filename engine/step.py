"""One engine step: the work scheduled, the model run over it, one token per sequence.

`next_work` picks what a step computes: the decode step already running ahead, or
what the scheduler admits. `run` computes it. On the CUDA path a greedy decode step
launches the next one before the host reads its tokens (`decode_ahead`), so the
host's bookkeeping overlaps the GPU's work; other steps run synchronously (`compute`).

Each sequence gets its token or the error that fails its request alone: a row that
cannot be sampled or whose logits processor raises fails only its own request, and
when the model itself raises, each sequence of the step runs alone (`compute_alone`),
so the error reaches only the requests it belongs to.
"""

import logging
import time
from dataclasses import dataclass

import torch

from engine.batch import Launched, flatten, flatten_next
from engine.errors import EngineError
from engine.sampler import SamplingParams, apply_processors, sample
from engine.scheduler import Scheduler
from engine.sequence import Sequence, Status

log = logging.getLogger("engine")

Item = tuple[Sequence, int]  # a sequence and the tokens this step computes for it
Result = tuple[Sequence, int | Exception]  # its next token, or the error that fails its request


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
class Ahead:
    """A greedy decode step the GPU runs while the host has not read its tokens yet."""

    seqs: list[Sequence]  # in row order
    launched: Launched


@dataclass
class Work:
    items: list[Item]
    num_preempted: int = 0
    ahead: Ahead | None = None  # the step already launched that computes these items


def next_work(scheduler: Scheduler, ahead: Ahead | None) -> Work | None:
    """The step running ahead, unless every request in it ended (aborted) meanwhile; else
    what the scheduler admits; None when there is nothing to do."""
    items = [(s, 1) for s in ahead.seqs if s.status is not Status.FINISHED] if ahead else []
    if items:
        return Work(items, 0, ahead)
    batch = scheduler.schedule()
    return Work(batch.items, batch.num_preempted) if batch else None


def run(work: Work, runner, scheduler: Scheduler) -> tuple[list[Result], Ahead | None]:
    """Compute the work: a result per sequence, and the decode step launched to run ahead of
    the next one (None when the next one is to be scheduled)."""
    try:
        if work.ahead is not None or can_run_ahead(work.items, runner):
            return decode_ahead(work, runner, scheduler)
        return compute(work.items, runner, scheduler), None
    except Exception as e:
        return compute_alone(work.items, e, runner, scheduler), None


def step_stats(step: int, work: Work, num_waiting: int, duration_s: float) -> StepStats:
    items = work.items
    return StepStats(
        step=step,
        num_seqs=len(items),
        num_decode=sum(1 for _, n in items if n == 1),
        num_prefill=sum(1 for _, n in items if n != 1),
        num_tokens=sum(n for _, n in items),
        num_preempted=work.num_preempted,
        num_waiting=num_waiting,
        duration_s=duration_s,
        time=time.time(),
    )


def can_run_ahead(items: list[Item], runner) -> bool:
    return len(items) <= runner.ahead_batch and all(
        n == 1 and seq.num_uncomputed == 1 and seq.params.greedy and seq.params.logits_processor is None
        for seq, n in items
    )


def decode_ahead(work: Work, runner, scheduler: Scheduler) -> tuple[list[Result], Ahead | None]:
    """A greedy decode step with the GPU kept one step ahead of the host: the next step is
    launched from this one's tokens while they are still on the device, and this step's
    bookkeeping (stop checks, text, callbacks) runs while the next one computes.
    A request that finishes here (EOS, stop string, abort) has a row in the step already
    launched; its token there is dropped when that step is read."""
    ahead = work.ahead
    if ahead is None:
        inputs = runner.prepare(flatten(work.items, scheduler.block_size))
        ahead = Ahead([s for s, _ in work.items], runner.launch(inputs))
    following = launch_next(ahead, runner, scheduler)
    tokens = ahead.launched.read()
    results: list[Result] = []
    for seq, token in zip(ahead.seqs, tokens):
        if seq.status is not Status.FINISHED:
            seq.num_computed += 1
            scheduler.share_computed(seq, seq.num_computed)
            results.append((seq, token))
    return results, following


def launch_next(ahead: Ahead, runner, scheduler: Scheduler) -> Ahead | None:
    """Launch the step after `ahead` when it is sure to hold the same sequences: nothing
    waits to be admitted, none of them stops by length, and each has a block for its next
    token. Otherwise None, and the next step is scheduled once this one's tokens are read."""
    seqs = ahead.seqs
    if scheduler.waiting or len(scheduler.running) != len(seqs):
        return None
    if any(s.status is not Status.RUNNING or s.num_output + 1 >= s.max_tokens for s in seqs):
        return None
    if not scheduler.reserve_next(seqs):
        return None
    inputs = runner.prepare(flatten_next(seqs, scheduler.block_size))
    return Ahead(seqs, runner.launch(inputs, ahead.launched.ids))


def compute(items: list[Item], runner, scheduler: Scheduler) -> list[Result]:
    """Run the model over items and sample the next token of each sequence whose span
    ends here: (sequence, token, or the error that fails that request alone)."""
    inputs = runner.prepare(flatten(items, scheduler.block_size))
    logits = runner.run(inputs)
    # While the device computes: the blocks this step fills go to the prefix cache (a step
    # that reads them runs after this one). The host would otherwise do it between steps.
    for seq, n in items:
        scheduler.share_computed(seq, seq.num_computed + n)
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


def compute_alone(items: list[Item], error: Exception, runner, scheduler: Scheduler) -> list[Result]:
    """The step failed as a whole: run each sequence alone, so that the error reaches
    only the requests it belongs to. (K/V written by the failed attempt is written again.)"""
    log.error("engine step of %d sequences failed; running each alone", len(items), exc_info=error)
    if len(items) == 1:
        return [(items[0][0], error)]
    results: list[Result] = []
    for item in items:
        try:
            results += compute([item], runner, scheduler)
        except Exception as e:
            log.error("request %s fails the model on its own", item[0].request_id, exc_info=e)
            results.append((item[0], e))
    return results


def prefill_logits(prompts: list[list[int]], runner, scheduler: Scheduler) -> torch.Tensor:
    """Logits at every position of each prompt, concatenated, from one batched prefill through
    the paged cache; its blocks are freed after."""
    bs, pool = scheduler.block_size, scheduler.pool
    seqs = []
    try:
        for i, ids in enumerate(prompts):
            seq = Sequence(f"logits-{i}", list(ids), len(ids), SamplingParams(), -1, torch.Generator())
            need = -(-len(ids) // bs)
            if not scheduler._make_free(need):
                raise EngineError("not enough KV blocks for these prompts; raise kv_cache_bytes")
            seq.owned_blocks = pool.allocate(need)
            seqs.append(seq)
        inputs = runner.prepare(flatten([(s, len(s.token_ids)) for s in seqs], bs))
        return runner.run(inputs, all_logits=True)
    finally:
        for s in seqs:
            pool.free(s.owned_blocks)
