"""How long `harness report` takes on a long run, and how large report.html gets.

Makes a run with the real loop (scripted model, local sandbox): STEPS steps reading a log,
every tenth step reading 300 lines, so large observations are clipped and linked. Then
times loading and rendering the report and prints its size. The acceptance bound is a
1,000-step report in under 10 s and under 10 MB.

    .venv/bin/python benchmarks/bench_report.py [--steps 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.launch import launch  # noqa: E402
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from core.policy import HarnessPolicy, StopPolicy  # noqa: E402
from agent.task import Task  # noqa: E402
from core.types import Usage  # noqa: E402
from evals.pricing import load_prices  # noqa: E402
from evals.reports.html import render_run  # noqa: E402
from evals.reports.load import load_run  # noqa: E402

LOG = "".join(f"log line {i:05d}\n" for i in range(1, 8001))


def script(steps: int) -> list[ScriptedReply]:
    out, prompt = [], 1500
    for i in range(1, steps):
        end = i + (300 if i % 10 == 0 else 0)
        out.append(ScriptedReply(
            text=f"Step {i}.", reasoning=f"Plan for step {i}.",
            tool_calls=[ScriptedCall(name="read_file", arguments={"path": "log.txt", "start_line": i, "end_line": end})],
            usage=Usage(prompt_tokens=prompt, cached_tokens=max(0, prompt - 400), completion_tokens=60)))
        prompt += 1200 if i % 10 == 0 else 40
    out.append(ScriptedReply(text="Done.", tool_calls=[ScriptedCall(name="submit", arguments={"answer": "done"})],
                             usage=Usage(prompt_tokens=prompt, cached_tokens=prompt - 400, completion_tokens=60)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="make the run here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        start = time.perf_counter()
        task = Task(id="long", prompt="Read log.txt and submit.", files={"log.txt": LOG})
        policy = HarnessPolicy(name="long", stop=StopPolicy(max_steps=args.steps + 1))
        _, run_dir = launch(task, ScriptedModel(script(args.steps), name="scripted:long"), "local", policy, out)
        made = time.perf_counter() - start
        start = time.perf_counter()
        run = load_run(run_dir, load_prices(), price_model="openai:gpt-5")
        loaded = time.perf_counter() - start
        path = render_run(run)
        total = time.perf_counter() - start
        size = path.stat().st_size
        linked = len(list((run_dir / "artifacts" / "report").glob("*")))
        print(f"run: {len(run.steps)} steps made by the loop in {made:.1f} s; {len(run.findings)} findings")
        print(f"report: {total:.2f} s (load {loaded:.2f} s, render {total - loaded:.2f} s), "
              f"{size / 1e6:.2f} MB, {linked} long texts linked instead of inlined")
        print(f"bounds: time {'ok' if total < 10 else 'OVER'} (< 10 s), size {'ok' if size < 10 * 2**20 else 'OVER'} (< 10 MB)")


if __name__ == "__main__":
    main()
