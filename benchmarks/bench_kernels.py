"""The projections of a decode step and a prefill chunk, kernel by kernel: cuBLAS (what the engine runs
for more than one row) against quack's Hopper GEMMs (quack-kernels, an optional library written in the
CUTLASS DSL) in several tile configurations, on the Llama-3-8B shape, side by side in one run.

    python benchmarks/bench_kernels.py --rows 32 128 8192 --json kernels.json

Decode rows (up to 128): weights rotated over >= 400 MB so each launch reads them from memory, timed
inside a CUDA graph, reported as TB/s of weight bytes. Prefill rows: one weight, TFLOP/s. Each quack
configuration is checked against cuBLAS (relative error) before it is timed; one that fails to
compile or to run is reported with its error. Configurations compile on first use (seconds each);
--budget-s stops trying new ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu import LLAMA3_8B, cuda_time, graph_time, log  # noqa: E402


def projections(c) -> dict[str, tuple[int, int]]:
    """name -> (out features N, in features K) of each projection of a layer, and the LM head."""
    h, q, kv, i = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    return {"qkv": (q + 2 * kv, h), "o": (h, q), "gate_up": (2 * i, h), "down": (h, i), "lm_head": (c.vocab_size, h)}


def decode_configs(rows: int):
    """swap_ab puts the weight's rows on the MMA's M side (64 or 128 per tile) and the few rows of x on its
    N side; split K gives the narrow matrices enough tiles for 132 SMs."""
    from quack.gemm_config import GemmConfig

    tn = max(16, min(128, -(-rows // 16) * 16))
    out = []
    for tm, pingpong, cluster_m, split in [
        (128, False, 1, 1),
        (128, False, 1, 2),
        (128, False, 1, 4),
        (64, True, 1, 1),
        (64, True, 1, 2),
        (64, True, 1, 4),
        (128, True, 1, 1),
        (128, True, 1, 2),
        (128, False, 2, 1),
        (64, True, 2, 2),
    ]:
        out.append(
            GemmConfig(
                tile_m=tm,
                tile_n=tn,
                pingpong=pingpong,
                cluster_m=cluster_m,
                cluster_n=1,
                swap_ab=True,
                split_k=split,
                is_dynamic_persistent=False,
            )
        )
    return out


def prefill_configs():
    from quack.gemm_config import GemmConfig

    return [
        GemmConfig(tile_m=tm, tile_n=tn, pingpong=pp, cluster_m=cm, cluster_n=cn, is_dynamic_persistent=False)
        for tm, tn, pp, cm, cn in [
            (256, 192, False, 2, 1),
            (256, 128, False, 2, 1),
            (128, 256, False, 2, 1),
            (128, 192, True, 2, 1),
            (128, 256, False, 1, 2),
        ]
    ]


def quack_call(x, w, y, cfg):
    from quack.gemm_interface import gemm_tuned

    return lambda: gemm_tuned.fn(x, w.t(), y, config=cfg, split_k=cfg.split_k)


def label(cfg) -> str:
    kind = "pp" if cfg.pingpong else "coop"
    swap = " swap" if cfg.swap_ab else ""
    return f"{cfg.tile_m}x{cfg.tile_n} {kind} c{cfg.cluster_m}x{cfg.cluster_n} k{cfg.split_k}{swap}"


def measure(name: str, n: int, k: int, rows: int, deadline: float) -> dict:
    decode = rows <= 128
    copies = max(2, -(-400_000_000 // (n * k * 2))) if decode else 1
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
    ref = F.linear(x, ws[0])
    gb, flop = n * k * 2 / 1e9, 2 * rows * n * k

    def per_launch(one) -> float:
        def every():
            for w in ws:
                one(w)

        try:
            return graph_time(every) / copies
        except RuntimeError:  # not capturable: timed outside a graph
            return cuda_time(every) / copies

    def rate(t: float) -> str:
        return f"{gb / t / 1e3:5.2f} TB/s" if decode else f"{flop / t / 1e12:5.0f} TFLOP/s"

    row: dict = {"n": n, "k": k, "rows": rows, "cublas_s": per_launch(lambda w: F.linear(x, w)), "quack": {}}
    log(f"{name:<8} {n:>6}x{k:<6} rows {rows:>5}: cuBLAS {row['cublas_s'] * 1e6:8.1f} us {rate(row['cublas_s'])}")
    best = None
    for cfg in decode_configs(rows) if decode else prefill_configs():
        if time.time() > deadline:
            log("    (time budget spent: no more configurations)")
            break
        t0 = time.perf_counter()
        try:
            quack_call(x, ws[0], y, cfg)()
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
            t = per_launch(lambda w, cfg=cfg: quack_call(x, w, y, cfg)())
        except Exception as e:  # a configuration the kernel refuses, or one that fails at run time
            log(f"    quack {label(cfg):<28} failed: {type(e).__name__}: {str(e)[:120]}")
            row["quack"][label(cfg)] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            continue
        row["quack"][label(cfg)] = {"s": t, "rel_err": err, "first_call_s": first}
        log(
            f"    quack {label(cfg):<28} {t * 1e6:8.1f} us {rate(t)} ({row['cublas_s'] / t:4.2f}x cuBLAS) "
            f"err {err:.1e}, first call {first:.1f} s"
        )
        if err < 1e-2 and (best is None or t < best[1]):
            best = (label(cfg), t)
    if best:
        row["best"] = {"config": best[0], "s": best[1], "vs_cublas": row["cublas_s"] / best[1]}
        log(f"    best quack {best[0]}: {row['cublas_s'] / best[1]:.2f}x cuBLAS")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[32, 128, 8192])
    ap.add_argument("--only", nargs="*", help="projection names (qkv o gate_up down lm_head); default all")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop trying new configurations after this")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    deadline = time.time() + args.budget_s
    try:
        import quack

        version = quack.__version__
    except ImportError as e:
        sys.exit(f"quack-kernels is not installed ({e}): pip install quack-kernels nvidia-cutlass-dsl[cu13]")
    log(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, quack {version}")
    results = {}
    for rows in args.rows:
        for name, (n, k) in projections(LLAMA3_8B).items():
            if not args.only or name in args.only:
                results[f"{name}/{rows}"] = measure(name, n, k, rows, deadline)
    for rows in args.rows:
        mine = [r for key, r in results.items() if r["rows"] == rows]
        cublas = sum(r["cublas_s"] for r in mine)
        best = sum(min(r["cublas_s"], r.get("best", {}).get("s", r["cublas_s"])) for r in mine)
        log(
            f"rows {rows}: one of each projection, cuBLAS {cublas * 1e3:.3f} ms; the faster of the two per matrix "
            f"{best * 1e3:.3f} ms ({cublas / best:.2f}x)"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
