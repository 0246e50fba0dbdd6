"""The batch-1 expert kernels (engine/cuda/moe.py) and decode attention (engine/cuda/decode_attention.py)
on a machine without a GPU, under Triton's CPU interpreter: the experts' routing, attention's partitions
of one context, the parts summed by the last to finish (engine/cuda/split.py) and the counters left at
zero are checked where the suite runs, not only on the GPU machine (tests/engine/test_cuda.py). The
interpreter is chosen when triton.jit decorates, so the kernels run in a process of their own with
TRITON_INTERPRET=1."""

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


# float16: the interpreter's dot products of bfloat16 come out as garbage (main's kernel too).
ATTENTION = textwrap.dedent(
    """
    import types

    import torch

    sms = [132]
    torch.cuda.get_device_properties = lambda _: types.SimpleNamespace(multi_processor_count=sms[0])
    from engine.cuda.decode_attention import decode_attention
    from engine.cuda.split import counters
    from tests.engine.paged_attention import reference

    torch.manual_seed(0)
    h, kvh, bs, nb = 8, 2, 16, 120
    lens = [1, 17, 300, 1000, 0, 70]  # one partition or several, merged by the last program; a padding row
    for d in (64, 128):
        kc = torch.randn(nb, bs, kvh, d, dtype=torch.float16)
        vc = torch.randn_like(kc)
        tables = [torch.randperm(nb)[: -(-n // bs)] for n in lens]
        tt = torch.zeros(len(lens), max(len(t) for t in tables) + 3, dtype=torch.int32)
        for i, t in enumerate(tables):
            tt[i, : len(t)] = t
        q = torch.randn(len(lens), h, d, dtype=torch.float16)
        for sms[0] in (132, 4):  # few programs (first tile before the wait), then enough to fill the GPU
            out = torch.full_like(q, float("nan"))
            decode_attention(q, kc, vc, tt, torch.tensor(lens, dtype=torch.int32), d**-0.5, out)
            for i, n in enumerate(lens):
                want = reference(q[i : i + 1], kc, vc, tables[i], n, 1, d**-0.5)[0]
                err = float((out[i].double() - want).norm() / want.norm()) if n else float(out[i].abs().max())
                assert err < 1e-2, (d, sms, n, err)
            assert int(counters("attention", out.device, len(lens) * kvh).abs().sum()) == 0
    print("ok")
    """
)


def interpreted(check: str) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_one_row_expert_kernels_match_the_expert_loop_in_the_interpreter():
    interpreted(CHECK)


def test_decode_attention_matches_a_float64_reference_in_the_interpreter():
    interpreted(ATTENTION)
