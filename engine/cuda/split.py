"""Work split over several programs whose partial results the last of them to finish sums.

A kernel short of programs (a batch-1 step's down projection: 128 tiles of its output for 132
multiprocessors; one sequence's decode attention: a program per KV head) keeps too few loads in
flight to stream its reads at full speed. Splitting each tile's work over several programs multiplies
the loads in flight; each program stores its partial result, counts itself in on the tile's counter,
and the one that counts last reads the others' partials back (from L2, in part order, so the result
is the same whichever finishes last) and writes the tile. That program also sets the counter back to
zero, so the counters need no clearing between launches. No second kernel, no float atomics.
"""

import torch
import triton
import triton.language as tl

_COUNTERS: dict[tuple[str, torch.device], torch.Tensor] = {}


def counters(owner: str, device: torch.device, n: int) -> torch.Tensor:
    """n int32 counters at zero, the owner's (a kernel's) alone, kept for the process: every launch
    leaves them at zero again. Grown only outside a CUDA graph capture (the engine's warm-up runs each
    step before capturing it), so no graph holds their clearing. One stream at a time may use them, as
    the engine's steps do."""
    have = _COUNTERS.get((owner, device))
    if have is None or have.numel() < n:
        have = _COUNTERS[owner, device] = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
    return have


@triton.jit
def last_to_arrive(count_ptr, parts):
    """Whether this program is the last of the `parts` sharing the counter at count_ptr to get here.
    Call it after storing the partial result; in the last program every other's is then visible to
    loads that bypass L1 (cache_modifier=".cg"), and the counter is back at zero."""
    tl.debug_barrier()  # every thread's stores made before one thread counts the program in
    seen = tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu")
    tl.debug_barrier()  # no thread reads the others' partials before the count came back
    last = seen == parts - 1
    tl.store(count_ptr, 0, mask=last)
    return last
