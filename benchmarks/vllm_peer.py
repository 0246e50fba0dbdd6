"""vLLM on the shapes bench_gpu.py measures the engine on, timed the same way, as the peer beside every row.

Run by bench_gpu.py in a process of its own once the engine has freed the GPU (vLLM sizes its KV cache
from the memory it finds free), or by hand:

    python benchmarks/vllm_peer.py --shape llama3-8b --batches 1 32 128 --json vllm.json

The model is a Hugging Face config directory written here with the shape's dimensions and vLLM's dummy
weights (`load_format="dummy"`, no tokenizer: prompts are token ids). Decode tokens/s is
(N - 1) * batch / (time for N new tokens - time for 1), on fresh random 64-token prompts each call
(transformers' peer row is timed so too); prefill is 16 fresh 2,048-token prompts with one token each.
vLLM keeps its defaults (torch.compile, CUDA graphs, chunked prefill), with graphs captured for the
measured batch sizes only and 8,192 tokens a step, as the engine is run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")  # FlashInfer is not carried to the GPU machine
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gpu import GEMV_SHAPES  # noqa: E402

from engine.config import transformers_config  # noqa: E402


def write_config(shape: str, layers: int | None, into: Path) -> int:
    """The shape's Hugging Face config in `into`; returns the vocabulary size."""
    c = GEMV_SHAPES[shape]
    if layers is not None:
        c = dataclasses.replace(
            c, num_layers=layers, moe_layers=tuple(range(layers)) if c.num_experts else c.moe_layers
        )
    cfg = transformers_config(c)
    cfg.architectures = ["Qwen3MoeForCausalLM" if c.num_experts else "LlamaForCausalLM"]
    cfg.dtype = "bfloat16"
    cfg.save_pretrained(into)
    return c.vocab_size


def prompts(n: int, length: int, vocab: int, rng: random.Random) -> list[dict]:
    return [{"prompt_token_ids": [rng.randrange(100, min(vocab, 32000)) for _ in range(length)]} for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", required=True, choices=["llama3-8b", "llama3.2-1b", "qwen3-30b-a3b"])
    ap.add_argument("--layers", type=int, help="cut the shape to this many layers (the MoE shape on 80 GB)")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32, 128])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--memory", type=float, default=0.85, help="vLLM's gpu_memory_utilization")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()

    import torch
    import vllm
    from vllm import LLM, SamplingParams

    rng = random.Random(0)
    out: dict = {"vllm": vllm.__version__, "torch": torch.__version__, "shape": args.shape, "layers": args.layers}
    with tempfile.TemporaryDirectory() as tmp:
        vocab = write_config(args.shape, args.layers, Path(tmp))
        t = time.perf_counter()
        llm = LLM(
            model=tmp,
            load_format="dummy",
            skip_tokenizer_init=True,
            dtype="bfloat16",
            max_model_len=4096,
            max_num_seqs=max(args.batches),
            max_num_batched_tokens=8192,
            gpu_memory_utilization=args.memory,
            compilation_config={"cudagraph_capture_sizes": sorted(set(args.batches))},
            seed=0,
        )
        out["startup_s"] = time.perf_counter() - t
        print(f"vLLM {vllm.__version__} ready in {out['startup_s']:.0f} s ({args.shape})", flush=True)

        def timed(batch: list[dict], n: int) -> float:
            params = SamplingParams(temperature=0, max_tokens=n, min_tokens=n, ignore_eos=True)
            torch.cuda.synchronize()
            start = time.perf_counter()
            llm.generate(batch, params, use_tqdm=False)
            torch.cuda.synchronize()
            return time.perf_counter() - start

        timed(prompts(2, 64, vocab, rng), 8)  # warm up
        out["decode_tok_s"] = {}
        for b in args.batches:
            timed(prompts(b, 64, vocab, rng), args.tokens)  # warm up at this batch
            full = timed(prompts(b, 64, vocab, rng), args.tokens)
            one = timed(prompts(b, 64, vocab, rng), 1)
            out["decode_tok_s"][b] = (args.tokens - 1) * b / (full - one)
            print(f"vLLM decode, {b:>3} sequences: {out['decode_tok_s'][b]:8.0f} tok/s", flush=True)
        timed(prompts(2, 2048, vocab, rng), 1)
        out["prefill_s"] = timed(prompts(16, 2048, vocab, rng), 1)
        print(f"vLLM prefill 16 x 2048: {out['prefill_s']:.3f} s", flush=True)
    args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
