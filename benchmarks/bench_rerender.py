"""How long `harness rerender` takes on a 100-step journal (the bound: under 5 s).

Makes a run with the real loop (scripted model, local sandbox) whose steps each read 200
lines of a 3,000-line file, then times the `harness rerender --per-step` command, in
process, under two policies that rewrite history (cache-aware compaction, masking).

    .venv/bin/python benchmarks/bench_rerender.py [--steps 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typer.testing import CliRunner  # noqa: E402

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.session import RunSpec, start  # noqa: E402
from cli.main import app  # noqa: E402
from core.policy import HarnessPolicy, StopPolicy  # noqa: E402

BIG = "".join(f"line {i}: " + "x" * (i % 90) + "\n" for i in range(3000))


def script(steps: int) -> list[ScriptedReply]:
    def reply(name: str, **arguments) -> ScriptedReply:
        return ScriptedReply(tool_calls=[ScriptedCall(name=name, arguments=arguments)])

    out = [reply("read_file", path="big.txt", start_line=1 + 29 * i, end_line=200 + 29 * i) for i in range(steps - 1)]
    return out + [reply("submit", answer="read it all")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        policy = HarnessPolicy(stop=StopPolicy(max_steps=args.steps))
        task = Task(prompt="read big.txt", files={"big.txt": BIG})
        summary, run_dir = start(RunSpec(task, ScriptedModel(script(args.steps)), policy, Path(tmp)))
        print(f"run: {summary.steps} steps, stop: {summary.stop_reason}")
        runner = CliRunner()
        for name in ("compact_cache_aware", "lean"):
            began = time.perf_counter()
            result = runner.invoke(app, ["rerender", str(run_dir), "--policy", name, "--per-step"])
            elapsed = time.perf_counter() - began
            if result.exit_code != 0:
                sys.exit(f"rerender under {name} failed:\n{result.output}")
            print(f"rerender --policy {name:<20} {elapsed:6.2f} s   bound {'ok' if elapsed < 5 else 'OVER'} (< 5 s)")


if __name__ == "__main__":
    main()
