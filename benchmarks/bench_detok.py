"""Detokenisation cost per token as a completion grows: decoding every id again for each
new token (the engine's old method) against the incremental detokeniser (engine/output.py).

    python benchmarks/bench_detok.py            # SmolLM2's tokenizer, a 4,000-token completion

The completion is real text (prose, code, non-ASCII) encoded by the model's tokenizer,
with one stop string that never matches, so the stop check is paid too. The cost at n
tokens is the median time of tokens n-49..n over several runs; a flat method has a
ratio near 1 between 4,000 and 100 tokens.
"""

import statistics
import time

import typer

from engine.output import TextOutput, find_stop
from engine.tokenizer import Tokenizer
from engine.weights import default_model_path, load_checkpoint

POINTS = (100, 1000, 4000)
WINDOW = 50
TEXT = (
    "The printing press changed how ideas travelled — naïve readers and café owners alike "
    "read pamphlets. 東京の図書館には多くの本があります。 def f(x):\n    return x ** 2  # 🎉\n"
)


def old_method(tokenizer: Tokenizer, ids: list[int], stop: list[str]) -> list[int]:
    """Per-token nanoseconds of decoding the whole completion again for each token."""
    times = []
    for n in range(1, len(ids) + 1):
        t0 = time.perf_counter_ns()
        text = tokenizer.decode(ids[:n])
        find_stop(text, stop)
        times.append(time.perf_counter_ns() - t0)
    return times


def new_method(tokenizer: Tokenizer, ids: list[int], stop: list[str]) -> list[int]:
    out = TextOutput(tokenizer, stop)
    times = []
    for t in ids:
        t0 = time.perf_counter_ns()
        out.push(t)
        times.append(time.perf_counter_ns() - t0)
    out.close()
    assert out.text == tokenizer.decode(ids), "the incremental text differs from decoding all ids"
    return times


def cost_at(runs: list[list[int]], n: int) -> float:
    """Microseconds per token around token n: median over the window and the runs."""
    return statistics.median(t for run in runs for t in run[n - WINDOW : n]) / 1000


def main(tokens: int = 4000, repeats: int = 3) -> None:
    tokenizer = Tokenizer.from_checkpoint(load_checkpoint(default_model_path()))
    ids: list[int] = []
    while len(ids) < tokens:
        ids += tokenizer.encode(TEXT)
    ids = ids[:tokens]
    stop = ["<never appears>"]
    points = [p for p in POINTS if p <= tokens]
    print(f"detokenising a {tokens}-token completion, {repeats} runs, tokenizer of {default_model_path().name}")
    print(f"{'method':<28}" + "".join(f"{f'us/token @{p}':>16}" for p in points) + f"{'ratio last/first':>18}")
    for name, method in (("decode all ids per token", old_method), ("incremental (output.py)", new_method)):
        runs = [method(tokenizer, ids, stop) for _ in range(repeats)]
        costs = [cost_at(runs, p) for p in points]
        print(f"{name:<28}" + "".join(f"{c:>16.2f}" for c in costs) + f"{costs[-1] / costs[0]:>18.2f}")


if __name__ == "__main__":
    typer.run(main)
