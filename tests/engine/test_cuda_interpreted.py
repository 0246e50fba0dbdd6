"""The batch-1 expert kernels (engine/cuda/moe.py) on a machine without a GPU, under Triton's CPU
interpreter: their routing, the down kernel's parts summed by the last to finish (engine/cuda/split.py)
and the counters left at zero are checked where the suite runs, not only on the GPU machine
(tests/engine/test_cuda.py). The interpreter is chosen when triton.jit decorates, so the kernels run
in a process of their own with TRITON_INTERPRET=1."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent(
    """
    from engine.cuda.moe import experts_add_decode
    from engine.cuda.split import counters
    from tests.engine.one_row_experts import EPS, expected, layer, ulps

    # (hidden, width, experts, top_k), widths and counts no tile divides; the engine's tiles, then the
    # down kernel in one part and in as many as there are slots; and two experts tied for the first place,
    # which gate/up (picking) and down (ranking) must put in the same slots.
    for hidden, width, experts, top_k in [(200, 72, 20, 4), (130, 33, 9, 3)]:
        for tiles in [None, ((16, 256, 4), (16, 256, 4, 1)), ((8, 64, 4), (8, 32, 4, 8))]:
            for tied in (False, True):
                x, norm, router, gate_up, down = layer(hidden, width, experts, "cpu", tied)
                got = x.clone()
                experts_add_decode(got, norm, EPS, router, gate_up, down, top_k, True, tiles)
                err = ulps(got, expected(x, norm, router, gate_up, down, top_k, True))
                assert err < 2, (hidden, tiles, tied, err)
                assert int(counters("experts", got.device, 1).abs().sum()) == 0, (hidden, tiles)
    print("ok")
    """
)


def test_one_row_expert_kernels_match_the_expert_loop_in_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
