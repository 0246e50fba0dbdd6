"""Projections of more than one row: cuBLAS, or quack's Hopper GEMMs (the optional `cuda-kernels` extra,
written in the CUTLASS DSL) for the matrices and row counts where quack measured faster.

The engine chooses when it starts (`choose`, before the decode graphs are captured): for every matrix
shape of the model, each form it is used in (plain, added into the residual stream, float32 logits,
the gate/up projection with SiLU·up in the epilogue) and each class of row counts (decode steps of up to 64 and of up to 256 rows; prefill chunks), it
times cuBLAS and a few quack tile configurations on the model's own weights, every layer's matrix in
turn so that they come from memory as in a step. A configuration whose result strays from cuBLAS's
is not used. The choice is logged, and `choose` returns it in words.
benchmarks/bench_kernels.py measured the candidates below on an H200: quack's swapped-operand tiles
won by up to 1.09x on some decode matrices and lost up to 1.8x on others; its prefill tiles won by up
to 1.11x.
"""

import logging
import time

import torch
import torch.nn.functional as F

from engine.cuda.activation import silu_and_mul

log = logging.getLogger("engine.cuda")

# (most rows in the class, rows it is timed at, quack configurations tried as
# (tile_m, tile_n, pingpong, cluster_m, swap_ab))
CLASSES = (
    (64, 32, ((64, 32, True, 1, True), (128, 32, False, 1, True), (128, 32, False, 2, True))),
    (256, 128, ((64, 128, True, 1, True), (128, 128, True, 1, True), (128, 128, False, 1, True))),
    (None, 8192, ((256, 192, False, 2, False), (256, 128, False, 2, False), (128, 256, False, 2, False))),
)
# The gated GEMM (SiLU(gate)·up in the epilogue, over the [gate; up] weight as the model stores it) has no
# swapped-operand tiles: its decode classes take 64-row tiles, the rows padded.
SWIGLU_TILES = (
    ((64, 128, True, 1, False), (64, 256, True, 1, False)),
    ((128, 128, True, 1, False), (64, 256, True, 1, False)),
    ((128, 256, False, 2, False), (256, 128, False, 2, False), (128, 192, True, 2, False)),
)
MIN_GAIN = 1.03  # an optional kernel replaces the default only when this much faster: below it, noise decides
MAX_ERROR = 1e-2  # ... and only when its result is this near the default's (relative Frobenius norm)
# What each shape measured, (out, in, form, class) -> (quack GemmConfig or None for cuBLAS, what was seen):
# a second engine of the same model in the process reuses it rather than timing again.
TIMED: dict[tuple[int, int, str, int], tuple[object | None, str]] = {}


def quack_missing() -> str | None:
    """Why quack cannot run here, or None when it can."""
    if torch.cuda.get_device_capability() != (9, 0):
        return (
            f"quack's kernels here are Hopper's; this GPU is sm_{''.join(map(str, torch.cuda.get_device_capability()))}"
        )
    try:
        import quack.gemm_interface  # noqa: F401
    except ImportError as e:
        return f"quack-kernels is not installed ({e}); pip install 'harness[cuda-kernels]'"
    return None


def rows_class(rows: int) -> int:
    return next(i for i, (most, _, _) in enumerate(CLASSES) if most is None or rows <= most)


def matmul(
    x: torch.Tensor,  # (T, in)
    w: torch.Tensor,  # (out, in)
    residual: torch.Tensor | None = None,  # (T, out): residual += x @ w.T, returned
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    # The choice rides on the matrix itself (`choose` sets it), so an engine that did not choose
    # (cuda_kernels="torch") runs cuBLAS whatever another engine in the process chose.
    configs = getattr(w, "quack_configs", None)
    return _run(x, w, residual, out_dtype, configs[rows_class(x.shape[0])] if configs else None)


def matmul_swiglu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor | None:
    """SiLU(gate)·up of x @ w.T, w being [gate; up] (2I, in), in one quack GEMM where `choose` chose one
    for this many rows; None where it did not (the caller multiplies and applies it apart)."""
    configs = getattr(w, "quack_swiglu", None)
    config = configs[rows_class(x.shape[0])] if configs else None
    return None if config is None else _swiglu(x, w, config)


def _swiglu(x, w, config):
    from quack.gemm_interface import gemm_gated

    _, act = gemm_gated(
        x, w.t(), activation="swiglu", store_preact=False, tuned=False, config=config, concat_layout=("B",)
    )
    return act


def accepted(candidate: torch.Tensor, reference: torch.Tensor, candidate_s: float, reference_s: float) -> bool:
    """Whether an optional kernel replaces the default: its output near the default's, and faster by MIN_GAIN."""
    return relative_error(candidate, reference) < MAX_ERROR and candidate_s * MIN_GAIN < reference_s


def relative_error(candidate: torch.Tensor, reference: torch.Tensor) -> float:
    ref = reference.float()
    return ((candidate.float() - ref).norm() / ref.norm()).item()


def _run(x, w, residual, out_dtype, config):
    if config is None:
        if residual is not None:
            return residual.addmm_(x, w.t())
        y = F.linear(x, w)
        return y if out_dtype is None else y.to(out_dtype)
    from quack.gemm_interface import gemm_tuned

    if residual is not None:
        gemm_tuned.fn(x, w.t(), residual, config=config, add_to_output=True)
        return residual
    y = torch.empty((x.shape[0], w.shape[0]), dtype=out_dtype or x.dtype, device=x.device)
    gemm_tuned.fn(x, w.t(), y, config=config)
    return y


def cuda_time(fn, reps: int = 20) -> float:
    """Median seconds of fn() over reps, timed with CUDA events after a warm-up."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return sorted(times)[len(times) // 2]


def _time_one(ws: list[torch.Tensor], form: str, cls: int, rows: int) -> tuple[object | None, str]:
    from quack.gemm_config import GemmConfig

    n, k = ws[0].shape
    x = torch.randn(rows, k, device=ws[0].device, dtype=ws[0].dtype)
    out_dtype = torch.float32 if form == "fp32" else None
    start = torch.randn(rows, n, device=x.device, dtype=x.dtype) if form == "residual" else None

    def every(config):
        if form == "swiglu":
            for w in ws:
                y = silu_and_mul(F.linear(x, w)) if config is None else _swiglu(x, w, config)
            return y
        residual = None if start is None else start.clone()
        for w in ws:
            y = _run(x, w, residual, out_dtype, config)
        return y if start is None else y - start  # the products alone, so that an error in them shows

    ref = every(None)
    best, best_s = None, cuda_time(lambda: every(None), 3)
    cublas_s = best_s
    for tm, tn, pingpong, cluster_m, swap in SWIGLU_TILES[cls] if form == "swiglu" else CLASSES[cls][2]:
        config = GemmConfig(
            tile_m=tm, tile_n=tn, pingpong=pingpong, cluster_m=cluster_m, cluster_n=1, swap_ab=swap,
            is_dynamic_persistent=False,
        )  # fmt: skip
        try:
            y = every(config)
            s = cuda_time(lambda config=config: every(config), 3)
        except Exception as e:  # a tile quack refuses for this shape: cuBLAS, or another tile, serves it
            log.info("quack %s for %dx%d %s: %s", config, n, k, form, e)
            continue
        if accepted(y, ref, s, best_s):
            best, best_s = config, s
    what = "cuBLAS" if best is None else f"quack {best.tile_m}x{best.tile_n}{' swap' if best.swap_ab else ''}"
    return best, f"{what} ({cublas_s / best_s:.2f}x cuBLAS)"


def choose(projections: dict[tuple[int, int, str], list[torch.Tensor]], max_rows: int) -> str:
    """projections: (out, in, form) -> that matrix in every layer. max_rows: the most rows a step can have.
    Marks each matrix with the kernel per class of rows; returns what was chosen, in words."""
    missing = quack_missing()
    if missing:
        log.info("projections of more than one row: cuBLAS (%s)", missing)
        return f"cuBLAS ({missing})"
    t = time.perf_counter()
    seen = []
    for (n, k, form), ws in projections.items():
        configs: list[object | None] = []
        for cls, (_, rows, _) in enumerate(CLASSES):
            lower = CLASSES[cls - 1][0] if cls else 0
            if lower is not None and lower >= max_rows:  # no step of this engine has that many rows
                configs.append(None)
                continue
            if (n, k, form, cls) not in TIMED:
                TIMED[(n, k, form, cls)] = _time_one(ws, form, cls, min(rows, max_rows))
            config, what = TIMED[(n, k, form, cls)]
            configs.append(config)
            seen.append(f"{n}x{k} {form} {CLASS_NAMES[cls]}: {what}")
        if any(configs):
            for w in ws:
                setattr(w, "quack_swiglu" if form == "swiglu" else "quack_configs", tuple(configs))
    text = "; ".join(seen)
    log.info("projection kernels chosen in %.1f s: %s", time.perf_counter() - t, text)
    return text


CLASS_NAMES = ("<=64 rows", "<=256 rows", "more rows")
