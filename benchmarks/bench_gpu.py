"""The engine on a CUDA GPU: decode against the bandwidth roofline, batching, prefill
against the matmul peak, vLLM on the same shapes (vllm_peer.py, in a process of its own, after
--part model and moe; --skip-vllm), transformers `generate`, and the prefix cache's effect on
time to first token over recorded agent traces.

    python benchmarks/bench_gpu.py --part model     # Llama-3-8B shape: roofline, batching, prefill, transformers
    python benchmarks/bench_gpu.py --part model --shape llama3.2-1b --batches 1 --skip-prefill --skip-transformers
    python benchmarks/bench_gpu.py --part moe --batches 1 32   # Qwen3-30B-A3B shape: experts against their roofline
    python benchmarks/bench_gpu.py --part gemv      # the decode projections: fused kernel configs against cuBLAS
    python benchmarks/bench_gpu.py --part gaps --shape llama3.2-1b   # where the GPU idles between batch-1 decode steps
    python benchmarks/bench_gpu.py --part traces    # agent traces, cached vs cold TTFT (Llama-3.2-1B shape)
    python benchmarks/bench_gpu.py --part load --agents 24   # the traces as 24 agents at once, per KV cache size

Weights are random (dummy) at the real shapes: speed depends on shapes, not values.
Ceilings are measured in the same run (a device-to-device copy; an 8192^3 bf16
matmul) and printed beside the card's datasheet figures (H200: 4.8 TB/s, H100: 3.35 TB/s; 989 TFLOP/s
dense bf16 on both).
Decode tokens/s counts tokens after each sequence's first, from the last first
token to the end (prompt processing excluded), as bench_engine.py does; for
transformers it is (N - 1) * batch / (time for N new tokens - time for 1).
The trace prompts come from benchmarks/data/trace_prompts.json.gz (made by
benchmarks/trace_prompts.py from tests/fixtures/trajectories, so the GPU machine
needs neither the harness nor the tokenizer file).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine import Engine, EngineConfig, ModelConfig, SamplingParams, dummy_checkpoint  # noqa: E402
from engine.batch import Launched  # noqa: E402
from engine.config import transformers_config  # noqa: E402
from engine.cuda.gemm import cuda_time  # noqa: E402
from engine.weights import Checkpoint, expected_shapes  # noqa: E402

LLAMA3_8B = ModelConfig(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_layers=32,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    rope_theta=500000.0,
    max_position_embeddings=8192,
    tie_word_embeddings=False,
    eos_token_ids=(128001,),
)
LLAMA32_1B = ModelConfig(
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=8192,
    num_layers=16,
    num_heads=32,
    num_kv_heads=8,
    head_dim=64,
    rope_theta=500000.0,
    max_position_embeddings=131072,
    tie_word_embeddings=True,
    eos_token_ids=(128001,),
)
QWEN3_30B_A3B = ModelConfig(  # Qwen3-30B-A3B (the Qwen3-Coder-30B-A3B class): 128 experts, 8 active
    vocab_size=151936,
    hidden_size=2048,
    intermediate_size=6144,
    num_layers=48,
    num_heads=32,
    num_kv_heads=4,
    head_dim=128,
    rope_theta=1e6,
    rms_norm_eps=1e-6,
    max_position_embeddings=40960,
    tie_word_embeddings=False,
    qk_norm=True,
    num_experts=128,
    num_experts_per_tok=8,
    moe_intermediate_size=768,
    norm_topk_prob=True,
    moe_layers=tuple(range(48)),
    architecture="qwen3_moe",
    eos_token_ids=(151645,),
)
SHAPES = {"llama3-8b": LLAMA3_8B, "llama3.2-1b": LLAMA32_1B}
# --part gemv also takes the mixture-of-experts shape's dense projections (attention and LM head).
GEMV_SHAPES = {**SHAPES, "qwen3-30b-a3b": QWEN3_30B_A3B}
# The vendor's datasheet figures by card (SXM parts): the roofline's bandwidth and the dense bf16 peak.
# main() sets the two below for the card it runs on; another card is refused rather than misreported.
DATASHEETS = {"H200": (4.8e12, 989e12), "H100 PCIe": (2.0e12, 756e12), "H100": (3.35e12, 989e12)}  # first match wins
DATASHEET_BW, DATASHEET_BF16 = DATASHEETS["H200"]


def log(*a) -> None:
    print(*a, flush=True)


def ceilings() -> tuple[float, float]:
    x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    bw = 2 * x.numel() / cuda_time(lambda src=x, dst=y: dst.copy_(src))
    del x, y
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    flops = 2 * 8192**3 / cuda_time(lambda: a @ b)
    return bw, flops


def sustained_matmul(seconds: float, peak: float) -> float:
    """FLOP/s of 8192^3 bf16 matmuls back to back for about `seconds`, where ceilings() times one
    at a time (the GPU rests between them). Printed as a fact about the clocks, not as a ceiling:
    on an H200 it read 661 TFLOP/s against 765 one at a time, and the prefill's own projections ran
    at about 697 between its memory-bound kernels (benchmarks/results/gpu-h200-skinny-2026-12-02/)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b, c = torch.randn_like(a), torch.empty_like(a)
    n = max(1, round(seconds * peak / (2 * 8192**3)))

    def products() -> None:  # into one buffer: n products kept alive would take n x 128 MB
        for _ in range(n):
            torch.matmul(a, b, out=c)

    return n * 2 * 8192**3 / cuda_time(products, reps=3)


class MadeAsRead(dict):
    """Random bf16 weights made on the GPU as the engine reads each one and not kept, so that the
    engine's own (fused) copies are the only weights on the card: an 80 GB card then holds the 8B
    shape with its KV cache and transformers after it, and all 48 layers of Qwen3-30B-A3B."""

    def __init__(self, config: ModelConfig, seed: int = 0):
        super().__init__()
        self.shapes, self.seed = expected_shapes(config), seed

    def __contains__(self, name) -> bool:
        return name in self.shapes

    def __getitem__(self, name: str) -> torch.Tensor:
        import zlib

        shape = self.shapes[name]
        if name.endswith("norm.weight"):
            return torch.ones(shape, device="cuda", dtype=torch.bfloat16)
        g = torch.Generator("cuda").manual_seed(self.seed * 1_000_003 + zlib.crc32(name.encode()))
        std = 0.02 if len(shape) == 2 else 0.01
        return (torch.randn(shape, generator=g, device="cuda") * std).to(torch.bfloat16)

    def materialised(self) -> dict[str, torch.Tensor]:
        return {name: self[name] for name in self.shapes}


def made_as_read(c: ModelConfig) -> Checkpoint:
    return Checkpoint(c, MadeAsRead(c), None, "dummy", {})


def weights_bytes(c: ModelConfig) -> int:
    return 2 * sum(torch.Size(s).numel() for s in expected_shapes(c).values())


def kv_bytes(args, c: ModelConfig) -> int:
    """--kv-gib, or 24 GiB where the card holds it beside the weights with 12 GiB to spare (CUDA graphs,
    activations, the allocator's slack), else what is left after them."""
    if args.kv_gib is not None:
        return args.kv_gib << 30
    free_gpu()
    free, _ = torch.cuda.mem_get_info()
    return max(1 << 30, min(24 << 30, free - weights_bytes(c) - (12 << 30)))


def kernel_breakdown(fn, reps: int = 5, after: bool = False) -> list[tuple[str, tuple[int, float]]]:
    """GPU time per kernel name for one call of fn, averaged over reps (CUPTI sees kernels inside graphs).
    With after, each kernel is named after the one before it too ("_gemv_kernel < _decode_kernel"): one
    kernel's launches for different matrices (the QKV, output, router projections) told apart."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
    out: dict[str, list] = {}
    before = ""
    for e in events:
        row = out.setdefault(f"{e.name[:40]} < {before[:40]}" if after else e.name, [0, 0.0])
        row[0] += 1
        row[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        before = e.name
    rows = {k: (v[0] // reps, v[1] / reps) for k, v in out.items()}
    return sorted(rows.items(), key=lambda kv: -kv[1][1])


def sync_time(fn, reps: int = 50) -> float:
    """Median host seconds of fn() followed by a device synchronisation: what a step that waits
    for its result pays, the launch included."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def host_breakdown(engine: Engine, tokens: int) -> dict:
    """Median per batch-1 decode step: wall time per token, the engine's step (read to append,
    with the next step launched ahead inside it), and inside the step the runner's prepare and
    launch (which returns once the graph is launched), the host time of the graph launch itself,
    and the wait for the GPU's tokens. The step less the wait is what the host spends; the GPU
    stays busy while that is shorter than its own step."""
    r = engine.runner
    spent: dict = {"prepare": [], "launch": [], "graph_launch": [], "wait": []}

    def timed(name, fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            spent[name].append(time.perf_counter() - t)
            return out

        return wrapper

    def launch(*a, **k):
        out = timed("launch", real_launch)(*a, **k)
        return Launched(out.ids, timed("wait", out.read))

    real_launch = r.launch
    r.prepare, r.launch = timed("prepare", r.prepare), launch
    graph = r.graphs.graphs[1]
    r.graphs.graphs[1] = type("Timed", (), {"replay": staticmethod(timed("graph_launch", graph.replay))})()
    start = time.perf_counter()
    out = engine.generate([rand_prompt(64, 7)], SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True))[0]
    wall = (time.perf_counter() - start - out.ttft_s) / (len(out.token_ids) - 1)
    del r.prepare, r.launch
    r.graphs.graphs[1] = graph
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    steps = [s.duration_s for s in list(engine.step_stats)[-(len(out.token_ids) - 1) :] if s.num_prefill == 0]
    return {
        "wall_per_token_s": wall,
        "step_s": med(steps),
        **{f"{name}_s": med(times[1:]) for name, times in spent.items()},
    }


def rand_prompt(n: int, seed: int, vocab: int = 32000) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(100, vocab, (n,), generator=g).tolist()


def engine_decode_rate(engine: Engine, batch: int, tokens: int, prompt_len: int, seed: int) -> float:
    prompts = [rand_prompt(prompt_len, seed + i) for i in range(batch)]
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    start = time.perf_counter()
    outs = engine.generate(prompts, params)
    decode_s = time.perf_counter() - start - max(o.ttft_s for o in outs)
    return sum(len(o.token_ids) - 1 for o in outs) / decode_s


def weight_bytes(model) -> tuple[int, int]:
    """(all weight bytes incl. the embedding table, bytes a decode step reads: all but the embedding
    table, which a tied LM head reads whole)."""
    mats = [model.lm_head, model.norm]
    for layer in model.layers:
        mats += [layer.attn_norm, layer.qkv, layer.o, layer.mlp_norm, layer.gate_up, layer.down]
        if layer.qkv_bias is not None:
            mats.append(layer.qkv_bias)
    read = sum(t.numel() * t.element_size() for t in mats)
    tied = model.embed.data_ptr() == model.lm_head.data_ptr()
    return read + (0 if tied else model.embed.numel() * model.embed.element_size()), read


def layer_flops_per_token(c: ModelConfig) -> int:
    """The layers' projections (a token's chosen experts and the router where there are experts); the
    output projection is counted apart, for the rows that need logits."""
    h, q, kv, i = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    mlp = 3 * h * c.moe_intermediate_size * c.num_experts_per_tok + h * c.num_experts if c.num_experts else 3 * h * i
    return 2 * c.num_layers * (h * (q + 2 * kv) + q * h + mlp)


def prefill_flops(c: ModelConfig, prompts: int, length: int) -> int:
    """FLOPs of prefilling fresh prompts: the layers' projections for every token, causal attention
    (QK and PV over half the square), and the output projection for each prompt's last row only
    (an engine computes no other logits)."""
    attention = 2 * prompts * length**2 * c.num_heads * c.head_dim * c.num_layers
    return prompts * length * layer_flops_per_token(c) + prompts * 2 * c.hidden_size * c.vocab_size + attention


def free_gpu() -> None:
    """Hand what this process no longer uses back to the driver (a peer in another process sizes
    itself from the free memory)."""
    import gc

    gc.collect()
    torch.cuda.empty_cache()


def timed_prefill(engine: Engine, c: ModelConfig, n: int = 16, length: int = 2048) -> tuple[float, int]:
    """Seconds to prefill n fresh prompts of `length` tokens submitted together (after a warm-up of two),
    and their FLOPs."""
    engine.generate([rand_prompt(length, 50_000 + i) for i in range(2)], SamplingParams(temperature=0, max_tokens=1))
    prompts = [rand_prompt(length, 60_000 + i) for i in range(n)]
    start = time.perf_counter()
    outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=1))
    seconds = time.perf_counter() - start
    assert all(o.usage.cached_tokens == 0 for o in outs)
    return seconds, prefill_flops(c, n, length)


def hf_model(ckpt, c: ModelConfig):
    import transformers

    cfg = transformers_config(c)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg)
    model.load_state_dict(ckpt.tensors.materialised(), strict=False, assign=True)
    # Buffers are not in the state dict: rebuild the rotary table on the GPU, in float32 as HF makes it.
    with torch.device("cuda"):
        model.model.rotary_emb = type(model.model.rotary_emb)(cfg)
    if c.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def hf_decode_rate(model, batch: int, tokens: int, prompt_len: int) -> float:
    """transformers `generate` with its static cache, which makes it compile the decode forward
    (torch.compile, its own settings). The first, longest call sizes the cache and compiles at this
    batch; later calls reuse both."""
    ids = torch.tensor([rand_prompt(prompt_len, 1)] * batch, device="cuda")
    mask = torch.ones_like(ids)

    def run(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.inference_mode():
            model.generate(
                ids,
                attention_mask=mask,
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                pad_token_id=0,
                cache_implementation="static",
            )
        torch.cuda.synchronize()
        return time.perf_counter() - t

    run(tokens)
    run(tokens)
    return (tokens - 1) * batch / (run(tokens) - run(1))


def hf_peer(model, batches: list[int], tokens: int, ours: dict[int, float], label: str) -> dict[int, float]:
    """transformers beside the engine on the same shape: its rate and the engine's ratio to it, per batch."""
    import transformers

    out = {}
    for b in batches:
        out[b] = hf_decode_rate(model, b, tokens, 64)
        log(
            f"| {label} decode, {b} sequences | engine {ours[b]:.0f} tok/s | transformers {transformers.__version__} "
            f"(static cache, compiled) {out[b]:.0f} tok/s | {ours[b] / out[b]:.2f}x |"
        )
    return out


# ---------------------------------------------------------------- part 1: the 8B shape


def part_model(args, results: dict) -> None:
    c = SHAPES[args.shape]
    bw, peak = ceilings()
    log(f"measured ceilings: copy {bw / 1e12:.2f} TB/s (read + write), bf16 matmul 8192^3 {peak / 1e12:.0f} TFLOP/s")
    t = time.perf_counter()
    ckpt = made_as_read(c)
    ecfg = EngineConfig(
        device="cuda",
        kv_cache_bytes=kv_bytes(args, c),
        max_num_seqs=max(args.batches),
        max_num_batched_tokens=8192,
        max_model_len=4096,
        cuda_kernels=args.kernels,
    )
    engine = Engine(ckpt, ecfg)
    log(
        f"engine ready in {time.perf_counter() - t:.1f}s (dummy weights made on the GPU, graphs captured for "
        f"{engine.runner.graphs.sizes})"
    )
    log(f"projections of more than one row: {engine.runner.kernels}")
    all_bytes, read_bytes = weight_bytes(engine.model)
    roof = DATASHEET_BW / all_bytes
    roof_read_measured = bw / read_bytes
    roof_read = DATASHEET_BW / read_bytes
    log(
        f"weights {all_bytes / 1e9:.2f} GB ({read_bytes / 1e9:.2f} GB read per decode step); roofline "
        f"{roof:.0f} tok/s at {DATASHEET_BW / 1e12:.2f} TB/s over all weight bytes, {roof_read:.0f} tok/s over the bytes read, "
        f"{roof_read_measured:.0f} tok/s at the measured copy bandwidth over the bytes read"
    )

    engine.generate([rand_prompt(64, 999)], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))  # warm up
    decode, decode_sync = {}, {}
    for b in args.batches:
        runs = [engine_decode_rate(engine, b, args.tokens, 64, seed=1000 * b + r) for r in range(args.repeats)]
        decode[b] = sorted(runs)[len(runs) // 2]
        # The same engine with each step's tokens read before the next step is launched.
        ahead, engine.runner.ahead_batch = engine.runner.ahead_batch, 0
        sync_runs = [engine_decode_rate(engine, b, args.tokens, 64, seed=1000 * b + r) for r in range(args.repeats)]
        engine.runner.ahead_batch = ahead
        decode_sync[b] = sorted(sync_runs)[len(sync_runs) // 2]
        log(
            f"engine decode, {b:>3} sequences: {decode[b]:8.0f} tok/s (median of {' '.join(f'{r:.0f}' for r in runs)}); "
            f"synchronous steps {decode_sync[b]:8.0f} tok/s (median of {' '.join(f'{r:.0f}' for r in sync_runs)})"
        )

    # The forward pass alone: one replay of the captured graph per step (no scheduler, no sampling).
    g = engine.runner.graphs
    fwd = {b: cuda_time(g.graphs[b].replay, 50) for b in args.batches}
    eager1 = cuda_time(lambda: g._forward(1), 10)
    kv_token = c.kv_bytes_per_token(2)
    step_bytes = {}
    for b in fwd:  # the graphs replay the last decode step of the runs above: its context lengths
        step_bytes[b] = read_bytes + int(g.buf[3, :b].sum()) * kv_token
        log(
            f"graph replay, batch {b:>3}: {fwd[b] * 1e3:6.3f} ms/step = {b / fwd[b]:8.0f} tok/s; reads "
            f"{step_bytes[b] / 1e9:.2f} GB (weights + KV) = {step_bytes[b] / fwd[b] / DATASHEET_BW:.0%} of {DATASHEET_BW / 1e12:.2f} TB/s"
        )
    log(f"eager forward, batch 1: {eager1 * 1e3:6.3f} ms/step (no CUDA graph)")
    replay_sync = sync_time(g.graphs[1].replay)
    host = host_breakdown(engine, args.tokens)
    log(
        f"batch-1 host view: graph replay + synchronise {replay_sync * 1e3:.3f} ms; engine decode "
        f"{host['wall_per_token_s'] * 1e3:.3f} ms/token; the engine's step {host['step_s'] * 1e3:.3f} ms, of which "
        f"waiting for the GPU {host['wait_s'] * 1e3:.3f} ms, runner.prepare {host['prepare_s'] * 1e6:.0f} us, "
        f"runner.launch {host['launch_s'] * 1e6:.0f} us (the graph launch {host['graph_launch_s'] * 1e6:.0f} us)"
    )
    # The batch-1 step captured afresh with and without programmatic dependent launches (a fresh
    # capture alone moves the replay time by a few percent, so both sides are fresh captures).
    import engine.cuda as engine_cuda
    from engine.cuda.graphs import DecodeGraphs

    pdl_ab = {}
    for pdl in (True, False):
        engine_cuda.PDL = pdl
        engine.runner.graphs = DecodeGraphs(engine.model, engine.kv, 1, g.tables.shape[1])
        replay = engine.runner.graphs.graphs[1].replay
        runs = sorted((host_breakdown(engine, args.tokens) for _ in range(3)), key=lambda h: h["wall_per_token_s"])
        pdl_ab["with PDL" if pdl else "without PDL"] = {
            "graph_step_s": cuda_time(replay, 50),
            "replay_sync_s": sync_time(replay),
            "host": runs[1],
            "kernels": kernel_breakdown(replay),
        }
    engine_cuda.PDL = True
    engine.runner.graphs = g
    for name, v in pdl_ab.items():
        log(
            f"batch-1, fresh capture {name}: graph replay {v['graph_step_s'] * 1e3:.3f} ms, replay + synchronise "
            f"{v['replay_sync_s'] * 1e3:.3f} ms, engine decode {v['host']['wall_per_token_s'] * 1e3:.3f} ms/token "
            "(median of 3)"
        )
    log("batch-1 step by kernel without PDL (profiler, inside the graph; kernels do not overlap):")
    for name, (calls, us) in pdl_ab["without PDL"]["kernels"]:
        log(f"  {us:8.1f} us  {calls:4d} calls  {name[:100]}")
    kernels = kernel_breakdown(g.graphs[1].replay)
    log(
        f"batch-1 step by kernel (profiler, inside the graph; {sum(us for _, (_, us) in kernels):.1f} us of kernels "
        f"in a {fwd[1] * 1e6:.1f} us step; a dependent launch's time includes its wait for the kernel in front):"
    )
    for name, (calls, us) in kernels:
        log(f"  {us:8.1f} us  {calls:4d} calls  {name[:100]}")
    kernels_batch = {b: kernel_breakdown(g.graphs[b].replay) for b in args.batches if b > 1}
    for b, rows in kernels_batch.items():
        log(f"batch-{b} step by kernel (profiler, inside the graph; {fwd[b] * 1e6:.1f} us step):")
        for name, (calls, us) in rows[:8]:
            log(f"  {us:8.1f} us  {calls:4d} calls  {name[:100]}")

    # One sequence deep into its context, where attention reads as much as a few projections (after
    # the graph measurements above, which replay the last steps of the runs before them).
    long_prompt = ecfg.max_model_len - args.tokens - 8
    long_rate = engine_decode_rate(engine, 1, args.tokens, long_prompt, seed=77)
    long_bytes = read_bytes + (long_prompt + args.tokens // 2) * c.kv_bytes_per_token(2)
    log(
        f"engine decode, 1 sequence after a {long_prompt:,}-token prompt: {long_rate:8.0f} tok/s; reads "
        f"{long_bytes / 1e9:.2f} GB a step (weights + mean KV) = {long_rate * long_bytes / DATASHEET_BW:.0%} of {DATASHEET_BW / 1e12:.2f} TB/s"
    )

    results["model"] = {
        "shape": args.shape,
        "copy_bw": bw,
        "matmul_peak": peak,
        "weight_bytes": all_bytes,
        "read_bytes": read_bytes,
        "roofline_tok_s": roof,
        "decode_tok_s": decode,
        "decode_sync_tok_s": decode_sync,
        "decode_long_context": {"prompt": long_prompt, "tok_s": long_rate, "step_bytes": long_bytes},
        "graph_step_s": fwd,
        "eager_step_s_b1": eager1,
        "step_bytes": step_bytes,
        "kernels_b1": kernels,
        "kernels_batch": kernels_batch,
        "replay_sync_s_b1": replay_sync,
        "host_b1": host,
        "pdl_ab_b1": pdl_ab,
    }
    log("")
    log("| measure | engine | reference | ratio |")
    log("| --- | --- | --- | --- |")
    if 1 in decode:
        log(
            f"| batch-1 decode (engine, end to end) | {decode[1]:.0f} tok/s | roofline {roof:.0f} tok/s ({DATASHEET_BW / 1e12:.2f} TB/s, all weights) | {decode[1] / roof:.1%} |"
        )
        log(
            f"| batch-1 decode (engine, end to end) | {decode[1] * read_bytes / 1e12:.2f} TB/s | {DATASHEET_BW / 1e12:.2f} TB/s over the bytes read | {decode[1] / roof_read:.1%} |"
        )
        log(
            f"| batch-1 decode, synchronous steps (engine, end to end) | {decode_sync[1]:.0f} tok/s | roofline {roof:.0f} tok/s | {decode_sync[1] / roof:.1%} |"
        )
        log(
            f"| batch-1 decode (graph replay only) | {1 / fwd[1]:.0f} tok/s | roofline {roof:.0f} tok/s | {1 / fwd[1] / roof:.1%} |"
        )
        log(
            f"| batch-1 decode step bytes / time | {read_bytes / fwd[1] / 1e12:.2f} TB/s | measured copy {bw / 1e12:.2f} TB/s | {read_bytes / fwd[1] / bw:.0%} |"
        )
    for b in args.batches:
        log(
            f"| decode, {b} sequences | {decode[b]:.0f} tok/s (graph {fwd[b] * 1e3:.2f} ms/step) | "
            f"{step_bytes[b] / 1e9:.2f} GB read per step at {DATASHEET_BW / 1e12:.2f} TB/s: {step_bytes[b] / DATASHEET_BW * 1e3:.2f} ms | "
            f"{step_bytes[b] / fwd[b] / DATASHEET_BW:.0%} |"
        )
    log(
        f"| decode, 1 sequence after a {long_prompt:,}-token prompt | {long_rate:.0f} tok/s | "
        f"{long_bytes / 1e9:.2f} GB read per step at {DATASHEET_BW / 1e12:.2f} TB/s: {long_bytes / DATASHEET_BW * 1e3:.2f} ms | "
        f"{long_rate * long_bytes / DATASHEET_BW:.0%} |"
    )
    if args.skip_prefill:
        engine.shutdown()
        return

    # Prefill: 16 fresh prompts of 2048 tokens submitted together, chunked at 8192 tokens per step.
    n_p, len_p = 16, 2048
    prefill_s, flops = timed_prefill(engine, c, n_p, len_p)
    sustained = sustained_matmul(1.0, peak)  # right after the prefill, as warm as it left the GPU
    log(f"bf16 matmul 8192^3 back to back for about 1 s: {sustained / 1e12:.0f} TFLOP/s")
    tokens = n_p * len_p
    log(
        f"prefill {n_p} x {len_p} tokens: {prefill_s:.3f} s = {tokens / prefill_s:,.0f} tok/s, "
        f"{flops / prefill_s / 1e12:.0f} TFLOP/s"
    )
    seeds = iter(range(70_000, 1_000_000, n_p))  # fresh prompts for every run: nothing from the prefix cache

    def fresh_prefill():
        start = next(seeds)
        engine.generate(
            [rand_prompt(len_p, start + i) for i in range(n_p)], SamplingParams(temperature=0, max_tokens=1)
        )

    kernels = kernel_breakdown(fresh_prefill, reps=1)
    log(
        f"prefill {n_p} x {len_p} by kernel (profiler, one run; {sum(us for _, (_, us) in kernels) / 1e3:.1f} ms of "
        f"kernels in a {prefill_s * 1e3:.1f} ms run):"
    )
    for name, (calls, us) in kernels[:12]:
        log(f"  {us / 1e3:8.1f} ms  {calls:4d} calls  {name[:100]}")
    engine.shutdown()

    hf = {}
    if args.skip_transformers:
        log("transformers: skipped")
    else:
        try:
            model = hf_model(ckpt, c)
            hf = hf_peer(model, [b for b in args.batches if b <= 32], args.hf_tokens, decode, args.shape)
            del model
        except ImportError as e:
            log(f"transformers unavailable: {e}")
    results["model"].update(
        prefill_s=prefill_s, prefill_tokens=tokens, prefill_flops=flops, matmul_sustained=sustained, hf_tok_s=hf
    )
    log(
        f"| prefill {n_p} x {len_p} | {flops / prefill_s / 1e12:.0f} TFLOP/s ({tokens / prefill_s:,.0f} tok/s) | "
        f"measured matmul {peak / 1e12:.0f} / datasheet {DATASHEET_BF16 / 1e12:.0f} TFLOP/s | "
        f"{flops / prefill_s / peak:.0%} / {flops / prefill_s / DATASHEET_BF16:.0%} |"
    )


def part_gaps(args, results: dict) -> None:
    """A profiler timeline of batch-1 engine decode, with decode ahead and with synchronous
    steps: how long the GPU idles between kernels and copies, before which ones, and the work
    outside the captured graph (what a step costs beyond its graph replay)."""
    from torch.profiler import ProfilerActivity, profile

    ckpt = made_as_read(SHAPES[args.shape])
    cfg = EngineConfig(
        device="cuda", kv_cache_bytes=kv_bytes(args, SHAPES[args.shape]), max_num_seqs=1, max_model_len=4096
    )
    engine = Engine(ckpt, cfg)
    params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    engine.generate([rand_prompt(64, 1)], params)  # warm up
    out: dict = {}
    for mode, ahead in (("decode ahead", engine.runner.ahead_batch), ("synchronous steps", 0)):
        engine.runner.ahead_batch = ahead
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            engine.generate([rand_prompt(64, 2)], params)
        spans = sorted(
            (e.time_range.start, e.time_range.end, e.name) for e in prof.events() if e.device_type.name == "CUDA"
        )
        window = spans[len(spans) // 3 :][:400]  # mid-decode, past the prefill
        gaps, end = [], window[0][1]
        for start, stop, name in window[1:]:
            if start > end:
                gaps.append((start - end, name))
            end = max(end, stop)
        outside: dict[str, list[float]] = {}
        for start, stop, name in window:
            if not any(k in name for k in ("_gemv_kernel", "_decode_kernel", "_rms_norm")):
                outside.setdefault(name[:70], []).append(stop - start)
        idle = sum(g for g, _ in gaps)
        log(f"{mode}: {len(window)} GPU events over {end - window[0][0]:.0f} us, idle {idle:.0f} us")
        log("  longest idle spans (us, before): " + ", ".join(f"{g:.1f} {n[:32]}" for g, n in sorted(gaps)[::-1][:6]))
        for name, d in sorted(outside.items(), key=lambda kv: -sum(kv[1]))[:6]:
            log(f"  {len(d):4d} x {sum(d) / len(d):6.1f} us  {name}")
        out[mode] = {"span_us": end - window[0][0], "idle_us": idle, "outside_graph_kernels": outside}
    engine.shutdown()
    results["gaps"] = out


def part_layout(args, results: dict) -> None:
    """One decode step's matmuls at batch 1, weights stored (in, out) as the engine keeps them
    (x @ W) against (out, in) as torch.nn.Linear keeps them (x @ W.T): which layout cuBLAS
    reads faster from memory."""
    c = LLAMA3_8B
    h, q, kv, i = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    shapes = {"qkv": (h, q + 2 * kv), "o": (q, h), "gate_up": (h, 2 * i), "down": (i, h), "lm_head": (h, c.vocab_size)}
    out = {}
    for batch in (1, 8):
        for name, (k, n) in shapes.items():
            ws = [torch.randn(k, n, device="cuda", dtype=torch.bfloat16) for _ in range(4)]  # rotate past the L2
            wt = [w.t().contiguous() for w in ws]
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            a = cuda_time(lambda x=x, ws=ws: [x @ w for w in ws], 20) / 4
            b = cuda_time(lambda x=x, wt=wt: [x @ w.t() for w in wt], 20) / 4
            tb = k * n * 2 / 1e12
            out[f"{name}/b{batch}"] = (a, b)
            log(
                f"batch {batch} {name:<8} {k}x{n}: (in,out) {a * 1e6:7.1f} us {tb / a:5.2f} TB/s | "
                f"(out,in) {b * 1e6:7.1f} us {tb / b:5.2f} TB/s"
            )
            del ws, wt
    results["layout"] = out


def graph_time(fn, reps: int = 20) -> float:
    """Median seconds of fn() replayed from a CUDA graph (as the decode step runs it)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return cuda_time(graph.replay, reps)


# (BLOCK_N, BLOCK_K, warps, tiles read ahead)
GEMV_CONFIGS = [
    (2, 1024, 4, 1),
    (4, 512, 4, 1),
    (4, 1024, 8, 1),
    (8, 256, 4, 1),
    (8, 512, 4, 1),
    (8, 512, 8, 1),
    (8, 1024, 8, 1),
    (16, 256, 4, 1),
    (16, 256, 8, 1),
    (16, 512, 8, 1),
    (32, 256, 8, 1),
    (4, 512, 4, 2),
    (8, 256, 4, 2),
    (8, 512, 4, 2),
    (8, 512, 8, 2),
    (16, 256, 4, 2),
    (16, 256, 8, 2),
]


def part_gemv(args, results: dict) -> None:
    """Each decode projection of both shapes, with the fusions the forward pass uses: the fused
    kernel (engine/cuda/linear.py) in several tile configurations and the engine's current choice,
    against cuBLAS F.linear without the fusions; weights rotated over >= 400 MB so each launch
    reads them from memory, timed inside a CUDA graph."""
    import torch.nn.functional as F

    import engine.cuda as engine_cuda
    from engine.cuda.linear import gemv, gemv_config

    out: dict = {}
    for shape in args.gemv_shapes:
        c = GEMV_SHAPES[shape]
        h, q, kv, i = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
        projections = {
            "qkv": (q + 2 * kv, h, {"norm"}),
            "o": (h, q, {"residual"}),
            "gate_up": (2 * i, h, {"norm"}),
            "down": (h, i, {"gated", "residual"}),
            "lm_head": (c.vocab_size, h, {"norm", "fp32"}),
        }
        if len(c.moe_layers) == c.num_layers:  # every MLP is experts (--part moe): no dense MLP to time
            del projections["gate_up"], projections["down"]
        for name, (n, k, kind) in projections.items():
            copies = max(2, -(-400_000_000 // (n * k * 2)))
            ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
            g = torch.rand(k, device="cuda", dtype=torch.bfloat16) + 0.5
            gb = n * k * 2 / 1e9
            row: dict = {}
            for rows in args.gemv_rows:
                x = torch.randn(rows, 2 * k if "gated" in kind else k, device="cuda", dtype=torch.bfloat16)
                y = torch.zeros(rows, n, device="cuda", dtype=torch.float32 if "fp32" in kind else torch.bfloat16)
                xin = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
                norm = g if "norm" in kind else None

                def fused(cfg, ws=ws, x=x, y=y, norm=norm, kind=kind):
                    for w in ws:
                        gemv(
                            x, w, y, norm=norm, eps=1e-5, gated="gated" in kind, residual="residual" in kind, config=cfg
                        )

                def cublas(ws=ws, xin=xin):
                    for w in ws:
                        F.linear(xin, w)

                mine = gemv_config(n, k)
                configs = set(GEMV_CONFIGS if rows == 1 else []) | {mine}
                times = {cfg: graph_time(lambda cfg=cfg: fused(cfg)) / copies for cfg in sorted(configs)}
                tc = graph_time(cublas) / copies
                engine_cuda.PDL = False
                other = {"without PDL": graph_time(lambda mine=mine: fused(mine)) / copies}
                engine_cuda.PDL = True
                best = min(times, key=times.get)
                row[rows] = {
                    "cublas_s": tc,
                    "fused_s": {str(k_): v for k_, v in times.items()},
                    "best": best,
                    "engine_config": mine,
                    "engine_config_variants_s": other,
                }
                log(
                    f"{shape:<12} {name:<8} {n:>6}x{k:<6} rows {rows}: cuBLAS {tc * 1e6:7.1f} us {gb / tc / 1e3:5.2f} TB/s | "
                    f"fused {mine} {times[mine] * 1e6:7.1f} us {gb / times[mine] / 1e3:5.2f} TB/s | best {best} "
                    f"{times[best] * 1e6:7.1f} us {gb / times[best] / 1e3:5.2f} TB/s"
                )
                log("    engine config: " + ", ".join(f"{v} {t * 1e6:.1f} us" for v, t in other.items()))
                if rows == 1:
                    log("    " + "  ".join(f"{cfg}:{gb / t / 1e3:.2f}" for cfg, t in times.items()))
            out[f"{shape}/{name}"] = row
            del ws
    results["gemv"] = out


# ---------------------------------------------------------------- part 2: agent traces


def replay(engine: Engine, requests: list[tuple[str, list[int]]]) -> list[dict]:
    once = SamplingParams(temperature=0, max_tokens=1)
    rows = []
    for kind, ids in requests:
        out = engine.generate([ids], once)[0]
        rows.append({"kind": kind, "prompt": len(ids), "cached": out.usage.cached_tokens, "ttft_s": out.ttft_s})
    return rows


def part_traces(args, results: dict) -> None:
    from trace_prompts import load

    c = LLAMA32_1B if args.trace_shape == "llama3.2-1b" else LLAMA3_8B
    data = load(ROOT / "benchmarks" / "data" / "trace_prompts.json.gz")
    names = args.trajectories or sorted(data)
    ckpt = dummy_checkpoint(c, seed=0, device="cuda", dtype=torch.bfloat16)
    kv = args.trace_cache_tokens * c.kv_bytes_per_token(2)
    common = dict(
        device="cuda",
        kv_cache_bytes=kv,
        max_num_seqs=8,
        max_num_batched_tokens=args.chunk,
        max_model_len=c.max_position_embeddings,
    )
    cold = Engine(ckpt, EngineConfig(**common, enable_prefix_cache=False))
    # Warm up the kernels at several prefill lengths (Triton compiles per specialisation).
    cold.generate(
        [rand_prompt(n, n) for n in (100, 3000, args.chunk + 500)], SamplingParams(temperature=0, max_tokens=1)
    )
    out = {}
    log(
        f"trace replay on {args.trace_shape} dummy weights, chunked prefill at {args.chunk} tokens, one request at a time"
    )
    for name in names:
        for policy, requests in data[name].items():
            warm_engine = Engine(ckpt, EngineConfig(**common))  # a cold cache per run, as a fresh server would have
            warm_engine.generate([rand_prompt(300, 1)], SamplingParams(temperature=0, max_tokens=1))
            cached = replay(warm_engine, requests)
            warm_engine.shutdown()
            del warm_engine
            torch.cuda.empty_cache()
            fresh = replay(cold, requests)
            rows = [
                dict(
                    step=i,
                    kind=a["kind"],
                    prompt=a["prompt"],
                    cached=a["cached"],
                    ttft_cached_s=a["ttft_s"],
                    ttft_cold_s=b["ttft_s"],
                )
                for i, (a, b) in enumerate(zip(cached, fresh))
            ]
            out[f"{name}/{policy}"] = rows
            hi = [r for r in rows if r["kind"] == "agent" and r["cached"] >= 0.9 * r["prompt"]]
            ratios = sorted(r["ttft_cached_s"] / r["ttft_cold_s"] for r in hi)
            tot_c = sum(r["ttft_cached_s"] for r in rows)
            tot_f = sum(r["ttft_cold_s"] for r in rows)
            log(
                f"{name} / {policy}: {len(rows)} requests, {sum(r['prompt'] for r in rows):,} prompt tokens, "
                f"{sum(r['cached'] for r in rows) / sum(r['prompt'] for r in rows):.1%} cached; total prefill "
                f"{tot_c:.2f} s cached vs {tot_f:.2f} s cold ({tot_c / tot_f:.1%}); steps >= 90% cached: {len(hi)}, "
                f"TTFT cached/cold median {ratios[len(ratios) // 2]:.1%} max {ratios[-1]:.1%}"
                if ratios
                else ""
            )
    cold.shutdown()
    results["traces"] = out
    log("")
    log(
        "| trajectory / policy | requests | prompt tokens | cached | total prefill, cache | total prefill, no cache | "
        "ratio | steps >= 90% cached | median TTFT cached | median TTFT cold | cached/cold median (max) |"
    )
    log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, rows in out.items():
        hi = [r for r in rows if r["kind"] == "agent" and r["cached"] >= 0.9 * r["prompt"]]
        ratios = sorted(r["ttft_cached_s"] / r["ttft_cold_s"] for r in hi)
        med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")  # noqa: E731
        p = sum(r["prompt"] for r in rows)
        tc, tf = sum(r["ttft_cached_s"] for r in rows), sum(r["ttft_cold_s"] for r in rows)
        log(
            f"| {key} | {len(rows)} | {p:,} | {sum(r['cached'] for r in rows) / p:.1%} | {tc:.2f} s | {tf:.2f} s | "
            f"{tc / tf:.1%} | {len(hi)} | {med([r['ttft_cached_s'] for r in hi]) * 1e3:.1f} ms | "
            f"{med([r['ttft_cold_s'] for r in hi]) * 1e3:.1f} ms | {med(ratios):.1%} ({ratios[-1] if ratios else float('nan'):.1%}) |"
        )


def shared_head(prompts: list[list[int]], block: int) -> int:
    """Length of the prefix every one of these prompts shares, floored to whole KV blocks."""
    n = min(len(p) for p in prompts)
    i = next((i for i in range(n) if len({p[i] for p in prompts}) > 1), n)
    return i // block * block


def salted(requests: list[tuple[str, list[int]]], at: int, agent: int) -> list[tuple[str, list[int]]]:
    """One agent's copy of a trace: a block of its own tokens right after the head all traces share,
    so copies share the system prompt and tools, as agents of one deployment do, and nothing after."""
    salt = rand_prompt(16, 10_000 + agent)
    return [(kind, ids[:at] + salt + ids[at + 16 :]) for kind, ids in requests]


def run_agents(engine: Engine, agents: list[list[tuple[str, list[int]]]]) -> dict:
    """Every agent in its own thread, each sending its requests one after another (one token each:
    the trace's replies are already in its later prompts); the engine's own figures over all of them."""
    import threading

    once = SamplingParams(temperature=0, max_tokens=1)
    rows: list[tuple[int, int, float]] = []
    lock = threading.Lock()

    def agent(requests: list[tuple[str, list[int]]]) -> None:
        for _, ids in requests:
            out = engine.generate([ids], once)[0]
            with lock:
                rows.append((len(ids), out.usage.cached_tokens, out.ttft_s))

    before = engine.stats()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=agent, args=(a,)) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    after = engine.stats()
    prompt, cached = sum(r[0] for r in rows), sum(r[1] for r in rows)
    ttfts = sorted(r[2] for r in rows)
    return {
        "requests": len(rows),
        "prompt_tokens": prompt,
        "cached_share": cached / prompt,
        "computed_tokens": prompt - cached,
        "wall_s": wall,
        "prompt_tokens_per_s": prompt / wall,
        "requests_per_s": len(rows) / wall,
        "ttft_p50_s": ttfts[len(ttfts) // 2],
        "ttft_p95_s": ttfts[int(0.95 * (len(ttfts) - 1))],
        "evicted_blocks": after["evicted_blocks"] - before["evicted_blocks"],
        "preemptions": after["preemptions"] - before["preemptions"],
        "max_batch_seqs": after["max_batch_seqs"],
    }


def part_load(args, results: dict) -> None:
    """The trace replay under load: many agents at once on one engine with a KV cache of fixed size."""
    from trace_prompts import load

    c = LLAMA32_1B if args.trace_shape == "llama3.2-1b" else LLAMA3_8B
    data = load(ROOT / "benchmarks" / "data" / "trace_prompts.json.gz")
    names = args.trajectories or sorted(data)
    policies = list(data[names[0]])
    ckpt = dummy_checkpoint(c, seed=0, device="cuda", dtype=torch.bfloat16)
    bs = 16
    at = shared_head([data[n][p][0][1] for n in names for p in policies], bs)
    working_set = sum(max(len(ids) for _, ids in data[names[i % len(names)]][policies[0]]) for i in range(args.agents))
    log(
        f"trace replay under load on {args.trace_shape} dummy weights: {args.agents} agents in flight "
        f"(copies of {', '.join(names)}, each with its own tokens after the {at}-token head all share); "
        f"working set of {policies[0]}: {working_set:,} tokens (the agents' longest prompts together)"
    )
    out = []
    for cache_tokens in args.load_cache_tokens:
        for policy in policies:
            agents = [salted(data[names[i % len(names)]][policy], at, i) for i in range(args.agents)]
            engine = Engine(
                ckpt,
                EngineConfig(
                    device="cuda",
                    kv_cache_bytes=cache_tokens * c.kv_bytes_per_token(2),
                    max_num_seqs=max(args.agents, 8),
                    max_num_batched_tokens=args.chunk,
                    max_model_len=c.max_position_embeddings,
                ),
            )
            engine.generate([rand_prompt(300, 1)], SamplingParams(temperature=0, max_tokens=1))  # compile, capture
            row = {"policy": policy, "cache_tokens": cache_tokens, **run_agents(engine, agents)}
            engine.shutdown()
            del engine
            torch.cuda.empty_cache()
            out.append(row)
            log(
                f"cache {cache_tokens:,} tokens, {policy}: {row['requests']} requests, "
                f"{row['prompt_tokens']:,} prompt tokens, {row['cached_share']:.1%} cached, "
                f"{row['computed_tokens']:,} computed, {row['wall_s']:.1f} s, "
                f"{row['prompt_tokens_per_s']:,.0f} prompt tok/s, TTFT p50 {row['ttft_p50_s'] * 1e3:.0f} ms "
                f"p95 {row['ttft_p95_s'] * 1e3:.0f} ms, {row['evicted_blocks']:,} blocks evicted, "
                f"{row['preemptions']} preemptions"
            )
    results["load"] = {"agents": args.agents, "head": at, "working_set_tokens": working_set, "rows": out}
    log("")
    log(
        "| KV cache (tokens) | policy | prompt tokens | cached | computed | wall | prompt tok/s | TTFT p50 | TTFT p95 | evicted blocks | preemptions |"
    )
    log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in out:
        log(
            f"| {r['cache_tokens']:,} | {r['policy']} | {r['prompt_tokens']:,} | {r['cached_share']:.1%} | "
            f"{r['computed_tokens']:,} | {r['wall_s']:.1f} s | {r['prompt_tokens_per_s']:,.0f} | "
            f"{r['ttft_p50_s'] * 1e3:.0f} ms | {r['ttft_p95_s'] * 1e3:.0f} ms | {r['evicted_blocks']:,} | "
            f"{r['preemptions']} |"
        )


# ---------------------------------------------------------------- the mixture-of-experts shape


def moe_step_bytes(model, c: ModelConfig, experts_read: list[int]) -> float:
    """Bytes a decode step reads: every weight but the experts and the embedding table, and in each
    layer the experts its tokens chose (experts_read, per layer)."""
    size = lambda t: t.numel() * t.element_size()  # noqa: E731
    read = size(model.lm_head) + size(model.norm)
    for layer, chosen in zip(model.layers, experts_read, strict=True):
        read += size(layer.attn_norm) + size(layer.qkv) + size(layer.o) + size(layer.mlp_norm)
        read += 0 if layer.qk_norm is None else size(layer.qk_norm)
        ex = layer.experts
        per_expert = (size(ex.gate_up) + size(ex.down)) / c.num_experts
        read += size(ex.router) + chosen * per_expert
    return read


def experts_chosen(graphs, size: int) -> list[int]:
    """The distinct experts each layer's tokens chose in the step the graph of `size` rows last ran,
    by running that step again eagerly with the routing recorded (the same tokens, positions and cache
    slots: it stores what the step stored)."""
    import engine.cuda.moe as moe

    seen, route = [], moe.route

    def recording(*a, **kw):
        ids, weights = route(*a, **kw)
        seen.append(int(torch.unique(ids).numel()))
        return ids, weights

    moe.route = recording
    try:
        with torch.inference_mode():
            graphs._forward(size)
    finally:
        moe.route = route
    return seen


# What --moe-tiles tries in the batch-1 step, one setting at a time beside the engine's others: the
# tiles of the gate/up and down expert kernels (moe.DECODE_TILES) and the matrix-vector tiles (block_n,
# block_k, warps, tiles ahead) of the router, QKV and output projections and the LM head, and decode
# attention's partitions and tiles; "together" sets several kinds at once; "without" leaves kernels out.
MOE_SWEEP: dict[str, list] = {
    "up": [(16, 128, 8), (16, 64, 4), (32, 64, 4), (8, 128, 4), (16, 128, 2), (32, 128, 8), (8, 256, 4)],
    "down": [(16, 256, 4, 1), (16, 256, 4, 2), (8, 512, 4, 2), (16, 128, 4, 4), (32, 128, 4, 8), (16, 256, 4, 8),
             (32, 256, 8, 4), (16, 512, 8, 2)],
    "router": [(2, 1024, 4, 1), (1, 2048, 4, 1)],
    "qkv": [(32, 256, 8, 2), (16, 128, 4, 2), (8, 256, 4, 2)],
    "o": [(4, 1024, 4, 2), (8, 512, 4, 2), (4, 2048, 4, 1)],
    "lm head": [(16, 256, 4, 2), (16, 256, 8, 2), (32, 256, 8, 1), (8, 512, 8, 2), (16, 512, 8, 1), (32, 128, 4, 2)],
    "together": [  # the tiles before the sweeps of 2026-12-07
        {"up": (16, 256, 4), "down": (16, 256, 4, 1), "router": (2, 1024, 4, 1), "qkv": (8, 512, 8, 1),
         "o": (8, 512, 8, 1)},
    ],
    # decode attention's (tokens a partition, tokens a tile, warps, first tile before the wait)
    "attention": [(64, 64, 4, True), (64, 64, 8, True), (32, 32, 4, True), (128, 64, 4, True), (128, 128, 8, True),
                  (64, 32, 4, True), (256, 64, 4, False)],
    # kernels left out of the step (wrong outputs, for timing only): what each costs with its neighbours
    "without": ["attention", "rope", "attention and rope"],
}  # fmt: skip


def moe_decode_tiles(g, c: ModelConfig) -> dict:
    """The batch-1 step replayed from a graph captured anew for each setting of MOE_SWEEP, the engine's
    choice first and last, timed in turns."""
    import engine.cuda.decode_attention as attention
    import engine.cuda.forward as forward
    import engine.cuda.linear as linear
    import engine.cuda.moe as moe

    h, q, kv = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    shapes = {"qkv": (q + 2 * kv, h), "o": (h, q), "lm head": (c.vocab_size, h)}
    tuned = dict(linear.TUNED)
    kept = moe.DECODE_TILES, moe.ROUTER_GEMV

    def qkv_without_rope(x, w, norm, eps, bias, rope, qk_norm=None, keep_kv=False):
        heads = rope.num_heads * rope.head_dim
        return linear.project(x, w, norm=norm, eps=eps, bias=bias)[:, :heads].view(
            -1, rope.num_heads, rope.head_dim
        ), None

    kept_fns = attention.partition_size, attention.tile, forward.decode_attention, forward.qkv_rope_store

    def apply(settings: dict) -> None:
        moe.DECODE_TILES, moe.ROUTER_GEMV = kept
        attention.partition_size, attention.tile, forward.decode_attention, forward.qkv_rope_store = kept_fns
        linear.TUNED.clear()
        linear.TUNED.update(tuned)
        for kind, value in settings.items():
            if kind == "attention":
                attention.partition_size = lambda *_, part=value[0]: part
                attention.tile = lambda *_, tile=value[1:]: tile
            elif kind == "without":
                if "attention" in value:
                    forward.decode_attention = lambda *args: args[-1].zero_()  # a memset: garbage would route nowhere
                if "rope" in value:
                    forward.qkv_rope_store = qkv_without_rope
            elif kind == "up":
                moe.DECODE_TILES = (value, moe.DECODE_TILES[1])
            elif kind == "down":
                moe.DECODE_TILES = (moe.DECODE_TILES[0], value)
            elif kind == "router":
                moe.ROUTER_GEMV = value
            else:
                linear.TUNED[shapes[kind]] = value

    configs = [("engine", {})]
    for kind, values in MOE_SWEEP.items():
        configs += [(f"{kind} {v}", v if kind == "together" else {kind: v}) for v in values]
    configs.append(("engine again", {}))
    graphs = {}
    try:
        for name, settings in configs:
            apply(settings)
            with torch.inference_mode():
                g._forward(1)
                torch.cuda.synchronize()
                graphs[name] = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graphs[name]):
                    g._forward(1)
    finally:
        apply({})
    times: dict[str, list[float]] = {name: [] for name in graphs}
    for _ in range(7):  # in turns, so that the card's clocks drifting touch every setting alike
        for name, graph in graphs.items():
            times[name].append(cuda_time(graph.replay, 10))
    out = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
    for name, t in out.items():
        log(f"    batch-1 step, {name}: {t * 1e6:.1f} us (median of 7 turns of 10)")
    return out


def part_moe(args, results: dict) -> None:
    """Decode on the Qwen3-30B-A3B shape: the grouped expert kernels (engine/cuda/moe.py) in CUDA graphs,
    against the roofline of the bytes a step reads (attention, router, the chosen experts, the LM head)."""
    c = dataclasses.replace(QWEN3_30B_A3B, num_layers=args.moe_layers, moe_layers=tuple(range(args.moe_layers)))
    bw, _ = ceilings()
    t = time.perf_counter()
    engine = Engine(
        made_as_read(c),
        EngineConfig(
            device="cuda",
            kv_cache_bytes=kv_bytes(args, c),
            max_num_seqs=max(args.batches),
            max_num_batched_tokens=8192,
            max_model_len=4096,
            cuda_kernels=args.kernels,
        ),
    )
    ready = time.perf_counter() - t
    log(f"Qwen3-30B-A3B shape ({c.num_layers} layers) ready in {ready:.0f} s; graphs for {engine.runner.graphs.sizes}")
    engine.generate([rand_prompt(64, 999)], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
    g = engine.runner.graphs
    out = {}
    for b in args.batches:
        rate = engine_decode_rate(engine, b, args.tokens, 64, seed=1000 * b)
        step = cuda_time(g.graphs[b].replay, 30)
        # One row's experts are routed inside the experts' own kernels (experts_add_decode, no route call):
        # its top k are k distinct experts.
        chosen = experts_chosen(g, b) if b > 1 else [c.num_experts_per_tok] * c.num_layers
        read = moe_step_bytes(engine.model, c, chosen) + int(g.buf[3, :b].sum()) * c.kv_bytes_per_token(2)
        out[b] = {
            "tok_s": rate,
            "step_ms": step * 1e3,
            "read_gb": read / 1e9,
            "roofline": read / step / DATASHEET_BW,
            "experts_per_layer_mean": sum(chosen) / len(chosen),
        }
        log(
            f"moe decode, {b:>3} sequences: engine {rate:8.0f} tok/s; graph replay {step * 1e3:6.3f} ms/step reads "
            f"{read / 1e9:.2f} GB = {read / step / DATASHEET_BW:.0%} of {DATASHEET_BW / 1e12:.2f} TB/s ({read / step / bw:.0%} of the "
            f"measured copy {bw / 1e12:.2f} TB/s); {sum(chosen) / len(chosen):.1f} experts per layer read"
        )
    prof = kernel_breakdown(g.graphs[1].replay)
    log(
        f"batch-1 step by kernel ({sum(us for _, (_, us) in prof):.0f} us of kernels): "
        + "; ".join(f"{name[:60]} {n}x {us:.0f} us" for name, (n, us) in prof[:16])
    )
    import engine.cuda as engine_cuda

    engine_cuda.PDL = False
    try:
        with torch.inference_mode():
            g._forward(1)
            torch.cuda.synchronize()
            alone = torch.cuda.CUDAGraph()
            with torch.cuda.graph(alone):
                g._forward(1)
        alone_s = cuda_time(alone.replay, 30)
        serial = kernel_breakdown(alone.replay, after=True)
    finally:
        engine_cuda.PDL = True
    log(
        f"batch-1 step without PDL (fresh capture, {alone_s * 1e6:.0f} us a step, "
        f"{sum(us for _, (_, us) in serial):.0f} us of kernels, none overlapping), by kernel < the kernel before it:"
    )
    for name, (calls, us) in serial:
        log(f"  {us:8.1f} us  {calls:4d} calls  {name}")
    tiles = moe_decode_tiles(g, c) if args.moe_tiles else None
    prefill_s, flops = timed_prefill(engine, c)
    log(f"moe prefill 16 x 2048: {prefill_s:.3f} s = {flops / prefill_s / 1e12:.0f} TFLOP/s")
    results["moe"] = {
        "shape": "qwen3-30b-a3b",
        "layers": c.num_layers,
        "decode": out,
        "kernels_batch1": prof[:12],
        "kernels_batch1_without_pdl": serial,
        "step_without_pdl_ms": alone_s * 1e3,
        "tiles_batch1_s": tiles,
        "prefill_s": prefill_s,
        "prefill_flops": flops,
    }
    engine.shutdown()
    del engine, g
    free_gpu()
    if args.skip_transformers:
        return
    # Random weights of transformers' own (speed depends on shapes, not values), made once the engine's
    # are freed: both sets would not fit beside each other with caches.
    import transformers

    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(transformers_config(c), dtype=torch.bfloat16).eval()
    log(f"transformers Qwen3-MoE, experts implementation {model.config._experts_implementation}")
    ours = {b: r["tok_s"] for b, r in out.items()}
    results["moe"]["hf_tok_s"] = hf_peer(model, [b for b in args.batches if b <= 32], args.hf_tokens, ours, "moe")


def peer_rows(label: str, ours: dict, peer: dict, batches: list[int]) -> list[str]:
    """Table rows: the engine's figure, vLLM's, and their ratio, per decode batch and for prefill."""
    rows = []
    for b in batches:
        if b in ours["decode"] and str(b) in peer["decode_tok_s"]:
            mine, theirs = ours["decode"][b], peer["decode_tok_s"][str(b)]
            rows.append(
                f"| {label} decode, {b} sequences | {mine:,.0f} tok/s | {theirs:,.0f} tok/s | {mine / theirs:.2f}x |"
            )
    if ours.get("prefill_s") and peer.get("prefill_s"):
        mine, theirs = ours["prefill_s"], peer["prefill_s"]
        rows.append(
            f"| {label} prefill 16 x 2,048 | {mine:.3f} s ({ours['prefill_flops'] / mine / 1e12:.0f} TFLOP/s) | "
            f"{theirs:.3f} s ({ours['prefill_flops'] / theirs / 1e12:.0f} TFLOP/s) | {theirs / mine:.2f}x |"
        )
    return rows


def part_vllm(args, results: dict) -> None:
    """vLLM on the shapes measured above, each in a process of its own (benchmarks/vllm_peer.py), and the
    engine's ratio to it on every row."""
    import subprocess

    free_gpu()
    runs = []
    if "model" in results:
        ours = results["model"]
        runs.append((args.shape, None, {**ours, "decode": ours["decode_tok_s"]}))
    if "moe" in results:
        moe = results["moe"]
        runs.append(
            ("qwen3-30b-a3b", args.moe_layers, {**moe, "decode": {b: r["tok_s"] for b, r in moe["decode"].items()}})
        )
    rows = []
    for shape, layers, ours in runs:
        out = Path(f"/tmp/vllm-{shape}.json")
        cmd = [sys.executable, str(ROOT / "benchmarks" / "vllm_peer.py"), "--shape", shape, "--json", str(out)]
        cmd += ["--batches", *map(str, args.batches), "--tokens", str(args.tokens)]
        cmd += ["--layers", str(layers)] if layers else []
        t = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout)[-3000:]
            log(f"vLLM did not run on {shape} (exit {done.returncode}, {time.perf_counter() - t:.0f} s):\n{tail}")
            results.setdefault("vllm", {})[shape] = {"error": tail}
            continue
        log(done.stdout.strip())
        peer = json.loads(out.read_text())
        results.setdefault("vllm", {})[shape] = peer
        label = shape if layers is None else f"{shape} ({layers} layers)"
        rows += peer_rows(label, ours, peer, args.batches)
    if rows:
        version = next(v["vllm"] for v in results["vllm"].values() if "vllm" in v)
        log("")
        log(f"| measure | engine | vLLM {version} | engine / vLLM |")
        log("| --- | --- | --- | --- |")
        for row in rows:
            log(row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--part", choices=["model", "moe", "layout", "gemv", "gaps", "traces", "load", "all"], default="all"
    )
    ap.add_argument("--skip-vllm", action="store_true", help="no vLLM beside --part model and moe")
    ap.add_argument(
        "--shape", choices=sorted(SHAPES), default="llama3-8b", help="model shape of --part model and --part gaps"
    )
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 128], help="decode batch sizes")
    ap.add_argument("--repeats", type=int, default=1, help="engine decode runs per batch size (the median is kept)")
    ap.add_argument("--skip-prefill", action="store_true")
    ap.add_argument("--gemv-rows", type=int, nargs="+", default=[1, 2, 4, 8], help="rows of --part gemv")
    ap.add_argument("--gemv-shapes", nargs="+", choices=sorted(GEMV_SHAPES), default=sorted(SHAPES))
    ap.add_argument(
        "--moe-layers", type=int, default=QWEN3_30B_A3B.num_layers, help="layers of the --part moe shape"
    )  # fmt: skip
    ap.add_argument("--moe-tiles", action="store_true", help="--part moe: sweep the batch-1 kernels' tiles (MOE_SWEEP)")
    ap.add_argument("--tokens", type=int, default=128, help="tokens generated per sequence in the engine decode runs")
    ap.add_argument("--hf-tokens", type=int, default=64, help="tokens generated per sequence by transformers")
    ap.add_argument("--kv-gib", type=int, help="KV cache of --part model, moe and gaps (default: 24, or what fits)")
    ap.add_argument("--skip-transformers", action="store_true")
    ap.add_argument("--trace-shape", choices=["llama3.2-1b", "llama3-8b"], default="llama3.2-1b")
    ap.add_argument("--trajectories", nargs="*", help="names under tests/fixtures/trajectories (default: all)")
    ap.add_argument("--trace-cache-tokens", type=int, default=400_000)
    ap.add_argument("--agents", type=int, default=24, help="agents in flight in --part load")
    ap.add_argument(
        "--load-cache-tokens", type=int, nargs="+", default=[1_600_000, 400_000], help="KV cache sizes of --part load"
    )
    ap.add_argument("--chunk", type=int, default=16384, help="prefill tokens per step in the trace replay")
    ap.add_argument(
        "--kernels",
        choices=["auto", "torch"],
        default="auto",
        help="the engine's cuda_kernels: auto (quack's GEMMs where faster, if installed) or torch (cuBLAS only)",
    )
    ap.add_argument("--json", type=Path, help="write every measurement here")
    args = ap.parse_args()
    if args.part in ("model", "all") and 1 not in args.batches:
        ap.error("--batches must include 1: the model part profiles the batch-1 step")
    torch.backends.cuda.matmul.allow_tf32 = False
    name = torch.cuda.get_device_name()
    card = next((c for c in DATASHEETS if c in name), None)
    if card is None:
        sys.exit(f"no datasheet figures for {name!r}: add its bandwidth and bf16 peak to DATASHEETS in {__file__}")
    global DATASHEET_BW, DATASHEET_BF16
    DATASHEET_BW, DATASHEET_BF16 = DATASHEETS[card]
    log(
        f"device: {name}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; datasheet {DATASHEET_BW / 1e12:.2f} TB/s, "
        f"{DATASHEET_BF16 / 1e12:.0f} TFLOP/s bf16"
    )
    results: dict = {}
    if args.part in ("model", "all"):
        part_model(args, results)
    if args.part in ("moe", "all"):
        part_moe(args, results)
    if args.part in ("layout", "all"):
        part_layout(args, results)
    if args.part in ("gemv", "all"):
        part_gemv(args, results)
    if args.part in ("gaps", "all"):
        part_gaps(args, results)
    if args.part in ("traces", "all"):
        part_traces(args, results)
    if args.part in ("load", "all"):
        part_load(args, results)
    if not args.skip_vllm and ("model" in results or "moe" in results):
        part_vllm(args, results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    log(f"done {time.strftime('%H:%M:%S UTC', time.gmtime())}")


if __name__ == "__main__":
    main()
