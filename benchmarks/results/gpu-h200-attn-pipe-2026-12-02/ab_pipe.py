"""A/B of the prefill attention kernel: 6d0e700's (prefill_before.py, beside this file) against the
engine's (engine/cuda/prefill_attention.py), with the attention-acc A/B's harness.

    PYTHONPATH=$PWD python3 benchmarks/results/gpu-h200-attn-pipe-2026-12-02/ab_pipe.py
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "gpu-h200-attn-acc-2026-12-02"), here]
import ab  # noqa: E402
import prefill_before  # noqa: E402

from engine.cuda import prefill_attention  # noqa: E402

ab.main(prefill_before, prefill_attention)
