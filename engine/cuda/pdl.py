"""Programmatic dependent launch (PDL) inside a kernel: griddepcontrol's two instructions, skipped
under Triton's CPU interpreter (TRITON_INTERPRET=1), which runs neither.

A kernel launched with `launch_pdl=cuda.PDL` may start while the kernel in front of it still runs, once
every program of that one has called pdl_launch_dependents (or ended). pdl_wait returns when the kernels
in front have completed and their writes are visible to this one; what no kernel writes (weights, a
step's inputs copied up before it) can be read before it. Outside a dependent launch both are no-ops.
"""

import os

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

_GDC = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") != "1")


@triton.jit
def pdl_wait():
    """griddepcontrol.wait: the kernels in front have completed, their writes visible."""
    if _GDC:
        gdc_wait()


@triton.jit
def pdl_launch_dependents():
    """griddepcontrol.launch_dependents: the kernel behind may start once every program has said so."""
    if _GDC:
        gdc_launch_dependents()
