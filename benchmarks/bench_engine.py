"""Benchmark: decode throughput against transformers, TTFT with and without the prefix cache.

    python benchmarks/bench_engine.py                  # the embedded SmolLM2-135M-Instruct
    python benchmarks/bench_engine.py --model PATH --tokens 64 --threads 2 --repeats 3 --skip-transformers
    python benchmarks/bench_engine.py --dummy          # random weights of SmolLM2-135M's shape, no files
    python benchmarks/bench_engine.py --weights int4   # only the 4-bit engine
    python benchmarks/bench_engine.py --skip-llamacpp  # no llama.cpp (else measured when llama-cpp-python is installed)

The engine runs once per --weights value (float32 matches transformers to 1e-3;
int4 keeps 4-bit projections with bfloat16 activations), then transformers runs in
float32 after the engines have shut down: torch's OpenMP workers slow down once two
threads have each run parallel ops (see engine/loop.py), so the two sides never overlap.
llama.cpp (benchmarks/llamacpp.py) runs last, on the same file with the same threads, token
ids and measurements, its 95%-cached prompt reusing as many tokens as the engine's cache served.

Decode tokens/s counts tokens after the first one, from the first token to the
last, so prompt processing is excluded on both sides; for transformers it is
(N - 1) * batch / (time for N new tokens - time for 1 new token). Every figure is
the best of --repeats runs, because a shared machine only ever makes a run slower.
TTFT uses a fresh 4,000-token prompt per repeat (cold), then a prompt sharing its
first 95% (so 95% can come from the prefix cache).
"""

import argparse
import logging
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Engine, EngineConfig, RequestOutput, SamplingParams  # noqa: E402
from engine.config import SMOLLM2_135M, transformers_config  # noqa: E402
from engine.weights import default_model_path, dummy_checkpoint  # noqa: E402


def _first_token_s(out: RequestOutput) -> float:
    if out.ttft_s is None:
        raise RuntimeError(f"request {out.request_id} produced no token (finish {out.finish_reason}: {out.error})")
    return out.ttft_s


def _engine_decode_rate(engine: Engine, prompt: list[int], batch: int, tokens: int) -> float:
    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    start = time.perf_counter()
    outs = engine.generate([prompt] * batch, params)
    end = time.perf_counter()
    # All requests arrive together; decode time runs from the last first-token to the end.
    first = max(_first_token_s(o) for o in outs)
    return sum(len(o.token_ids) - 1 for o in outs) / ((end - start) - first)


def _transformers_decode_rate(model, prompt: list[int], batch: int, tokens: int) -> float:
    ids = torch.tensor([prompt] * batch)
    mask = torch.ones_like(ids)

    def run(n):
        t = time.perf_counter()
        with torch.inference_mode():
            model.generate(
                ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=2
            )
        return time.perf_counter() - t

    return (tokens - 1) * batch / (run(tokens) - run(1))


def _ttft(engine: Engine, prompt: list[int]) -> tuple[float, int]:
    out = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=1))[0]
    return _first_token_s(out), out.usage.cached_tokens


def _transformers_model(path: str, dummy: bool):
    import transformers

    if dummy:
        return transformers.LlamaForCausalLM(transformers_config(SMOLLM2_135M)).eval()
    p = Path(path)
    if p.is_dir():
        return transformers.AutoModelForCausalLM.from_pretrained(str(p), dtype=torch.float32).eval()
    return transformers.AutoModelForCausalLM.from_pretrained(
        str(p.parent), gguf_file=p.name, dtype=torch.float32
    ).eval()


def _measure_engine(source, weights: str, args, n: int) -> dict:
    engine = Engine(
        source,
        EngineConfig(num_threads=args.threads, kv_cache_bytes=1 << 30, max_num_batched_tokens=512, weights=weights),
    )
    try:
        if args.dummy:
            prompt = [(i * 7919) % 40000 + 100 for i in range(39)]
            corpus = [(i * 104729) % 40000 + 100 for i in range(args.ttft_tokens * (n + 1))]
            tail = [(i * 31) % 40000 + 100 for i in range(args.ttft_tokens)]
        else:
            prompt = engine.encode_chat([{"role": "user", "content": "Write a long story about a lighthouse keeper."}])
            text = " ".join(
                f"Record {i}: the value of field {i % 17} is {i * 31 % 1000}." for i in range(600 * (n + 1))
            )
            corpus = engine.encode(text)
            tail = engine.encode(" A different ending: " + "tail " * 400)
        engine.generate([prompt] * 8, SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))  # warm up
        decode = {b: max(_engine_decode_rate(engine, prompt, b, args.tokens) for _ in range(n)) for b in (1, 8)}
        cold, warm, pairs = [], [], []
        for r in range(n):
            # A prompt never seen before (cold), then one sharing its first 95% (warm).
            long_ids = corpus[r * 1000 : r * 1000 + args.ttft_tokens]
            keep = int(len(long_ids) * 0.95)
            warm_ids = long_ids[:keep] + tail[: len(long_ids) - keep]
            cold.append(_ttft(engine, long_ids))
            warm.append(_ttft(engine, warm_ids))
            pairs.append((long_ids, warm_ids, warm[-1][1]))
        return {
            "prompt": prompt,
            "ttft_prompts": pairs,
            "decode": decode,
            "cold": min(cold),
            "warm": min(warm),
            "max_batch": engine.max_batch_seqs,
            "kv_bytes": engine.kv.bytes_per_token,
        }
    finally:
        engine.shutdown()


def _measure_llamacpp(path: str, args, n: int, prompt: list[int], ttft_prompts: list) -> dict | None:
    import llamacpp  # beside this file

    if llamacpp.lc is None:
        print("llama.cpp: not measured (pip install llama-cpp-python)")
        return None
    llama = llamacpp.LlamaCpp(path, args.threads, n_ctx=max(8192, 2 * args.ttft_tokens), n_seq=8)
    try:
        decode = {b: max(llama.decode_rate(prompt, b, args.tokens) for _ in range(n)) for b in (1, 8)}
        cold, warm = [], []
        for long_ids, warm_ids, cached in ttft_prompts:
            cold.append(llama.ttft(long_ids))
            warm.append(llama.ttft(warm_ids, cached))  # as many tokens reused as the engine's cache served
        return {"decode": decode, "cold": min(cold), "warm": min(warm), "cached": ttft_prompts[0][2]}
    finally:
        llama.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="GGUF file or HF directory (default: embedded SmolLM2-135M)")
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per request in the decode runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="runs per figure; the best is reported")
    ap.add_argument("--ttft-tokens", type=int, default=4000)
    ap.add_argument("--skip-transformers", action="store_true")
    ap.add_argument("--skip-llamacpp", action="store_true", help="leave llama.cpp out even where it is installed")
    ap.add_argument("--dummy", action="store_true", help="random weights of SmolLM2-135M's shape (both engines)")
    ap.add_argument("--weights", default="float32,int4", help="engine weight formats to measure, comma-separated")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    n = max(1, args.repeats)

    path = "dummy weights, SmolLM2-135M shape" if args.dummy else args.model or str(default_model_path())
    source = dummy_checkpoint(SMOLLM2_135M) if args.dummy else path
    runs = {w: _measure_engine(source, w, args, n) for w in args.weights.split(",")}
    prompt = next(iter(runs.values()))["prompt"]

    refs: dict[str, dict[int, float]] = {}
    if not args.skip_transformers:
        torch.set_num_threads(args.threads)
        t = time.perf_counter()
        model = _transformers_model(path, args.dummy)
        print(f"transformers loaded the model in {time.perf_counter() - t:.1f}s")
        _transformers_decode_rate(model, prompt, 1, 4)  # warm up
        refs["transformers"] = {
            b: max(_transformers_decode_rate(model, prompt, b, args.tokens) for _ in range(n)) for b in (1, 8)
        }
    llama = None
    if not args.skip_llamacpp and not args.dummy and path.endswith(".gguf"):
        llama = _measure_llamacpp(path, args, n, prompt, next(iter(runs.values()))["ttft_prompts"])
        if llama is not None:
            refs["llama.cpp"] = llama["decode"]

    print()
    print(f"model: {path}")
    print(
        f"threads: {args.threads}, decode tokens per request: {args.tokens}, prompt: {len(prompt)} tokens, best of {n}"
    )
    print("KV cache bytes per token: " + ", ".join(f"{r['kv_bytes']} ({w})" for w, r in runs.items()))
    print()
    print(
        f"{'decode tokens/s':<20}" + "".join(f"{'engine ' + w:>16}" for w in runs) + "".join(f"{r:>14}" for r in refs)
    )
    for b in (1, 8):
        row = f"{'batch ' + str(b):<20}" + "".join(f"{run['decode'][b]:>16.1f}" for run in runs.values())
        print(row + "".join(f"{ref[b]:>14.1f}" for ref in refs.values()))
    for name, ref in refs.items():
        for w, run in runs.items():
            ratios = ", ".join(f"batch {b} {run['decode'][b] / ref[b]:.2f}x" for b in (1, 8))
            print(f"engine {w} / {name}: {ratios}")
    for w, run in runs.items():
        (cold_s, cold_cached), (warm_s, warm_cached) = run["cold"], run["warm"]
        print()
        print(f"engine {w}:")
        print(f"  TTFT cold, {args.ttft_tokens} tokens:         {cold_s:8.3f} s  (cached {cold_cached})")
        print(f"  TTFT 95% cached, {args.ttft_tokens} tokens:   {warm_s:8.3f} s  (cached {warm_cached})")
        print(f"  cached / cold:                    {warm_s / cold_s:8.1%}")
        print(f"  most sequences batched in one step: {run['max_batch']}")
    if llama is not None:
        print()
        print("llama.cpp (the shared prefix's KV kept in its context):")
        print(f"  TTFT cold, {args.ttft_tokens} tokens:         {llama['cold']:8.3f} s")
        print(f"  TTFT 95% cached, {args.ttft_tokens} tokens:   {llama['warm']:8.3f} s  (cached {llama['cached']})")
        print(f"  cached / cold:                    {llama['warm'] / llama['cold']:8.1%}")


if __name__ == "__main__":
    main()
