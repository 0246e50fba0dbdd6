"""What the agent's memory costs in prompt tokens and prefix reuse, under every context preset.

Makes one 60-step run with the real loop (scripted model, local sandbox, `default+memory`): each step reads
150 lines of a 3,000-line file, and every fifth step updates a note in /memories with how far it read. Then
re-renders it (`agent/recorded/counterfactual.py`, the extractive summariser folding) under every preset and
the same preset with the memory on (NAME+memory): prompt tokens, the harness's ideal prefix reuse, peak
context and folds, side by side. Without the memory the memory tool's schema and notes are left out.

    .venv/bin/python benchmarks/bench_memory_reuse.py [--steps 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.models.pricing import load_prices  # noqa: E402
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from agent.recorded.counterfactual import counterfactual  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.session import RunSpec, start  # noqa: E402
from core.policy import StopPolicy  # noqa: E402
from core.presets import PRESETS, load_policy  # noqa: E402

BIG = "".join(f"line {i}: " + "x" * (i % 90) + "\n" for i in range(3000))
SKIP = ("local",)  # the embedded model's preset: a reply cap and a grammar, no context step


def reply(name: str, **arguments) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name=name, arguments=arguments)])


def script(steps: int) -> list[ScriptedReply]:
    out: list[ScriptedReply] = []
    for i in range(steps - 1):
        if i % 5 == 4:
            line = 1 + 29 * (i - 1) + 149
            note = f"read big.txt up to line {line}\n"
            out.append(
                reply("memory", command="create", path="/memories/progress.md", file_text=note, source=f"call_{i}_0")
                if i == 4
                else reply("memory", command="create", path=f"/memories/progress-{i}.md", file_text=note)
            )
        else:
            out.append(reply("read_file", path="big.txt", start_line=1 + 29 * i, end_line=150 + 29 * i))
    return out + [reply("submit", answer="read it all")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    names = [n for n in PRESETS if n not in SKIP]
    with tempfile.TemporaryDirectory() as tmp:
        policy = load_policy("default+memory").model_copy(update={"stop": StopPolicy(max_steps=args.steps)})
        task = Task(prompt="read big.txt, keeping notes of how far you got", files={"big.txt": BIG})
        summary, run_dir = start(RunSpec(task, ScriptedModel(script(args.steps)), policy, Path(tmp)))
        others = [load_policy(n + suffix) for n in names for suffix in ("", "+memory")]
        c = counterfactual(run_dir, others, load_prices(None))
    print(f"run: {summary.steps} steps under default+memory, stop: {summary.stop_reason}\n")
    head = f"{'policy':<30} {'prompt tokens':>14} {'ideal reuse':>12} {'peak':>8} {'folds':>6}"
    print(head + "\n" + "-" * len(head))
    rows = []
    for f in c.policies:
        share = f.reused_tokens / f.prompt_tokens if f.prompt_tokens else 0.0
        rows.append({"policy": f.policy, "prompt_tokens": f.prompt_tokens, "ideal_reuse": round(share, 4),
                     "peak": f.peak_context, "folds": f.compactions})  # fmt: skip
        print(f"{f.policy:<30} {f.prompt_tokens:>14,} {share:>11.1%} {f.peak_context:>8,} {f.compactions:>6}")
    if args.json:
        args.json.write_text(json.dumps({"steps": summary.steps, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
