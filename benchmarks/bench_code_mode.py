"""Single calls against run_code programs on the loop-shaped suite, side by side, in each sandbox.

Every task of evals/loops (rename, todos, slowest, captures) runs twice per sandbox with its scripted model
(evals/loops/solutions): under the `calls` policy (one call per reply, reads batched where they can be, one write
per reply as first_write_wins runs them) and under `code` (run_code programs). Per run: whether it reached its
end state (the task's check; for captures, the move the engine scores best), the model calls, the prompt tokens
(the harness's own count, tool schemas included: cl100k, as for any model whose tokenizer it does not hold), the
calls the tools ran (a program's included) and the wall time. Goal, on the suite's totals in every sandbox: the
same end states, at least 3x fewer model calls and at least 50% fewer prompt tokens in code mode. Exits 1 when
a sandbox misses it.

    .venv/bin/python benchmarks/bench_code_mode.py [--sandbox local --sandbox docker] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.journal.store import read_events  # noqa: E402
from agent.models.scripted import ScriptedModel  # noqa: E402
from agent.run.task import load_task  # noqa: E402
from agent.session import RunSpec, SandboxSpec, start  # noqa: E402
from core.events import InnerObserved, ModelReplied, RunStopped, ToolObserved  # noqa: E402
from core.presets import load_policy  # noqa: E402
from evals.loops import captures  # noqa: E402

LOOPS = ROOT / "evals" / "loops"
TASKS = ("rename", "todos", "slowest", captures.NAME)
MODES = ("calls", "code")


@dataclass
class Row:
    sandbox: str
    task: str
    mode: str
    reached: bool
    model_calls: int
    prompt_tokens: int
    tool_calls: int  # the calls tools ran: the model's, and its programs'
    wall_s: float
    stop: str  # the run's stop reason
    failed: str  # the first observation that was not ok, for a run that missed its end state


def run(task: str, mode: str, sandbox: str, out: Path) -> Row:
    model = ScriptedModel.from_file(LOOPS / "solutions" / f"{task}.yaml")
    policy = load_policy(str(LOOPS / "policies" / f"{mode}.toml"))
    began = time.perf_counter()
    if task == captures.NAME:
        box = SandboxSpec(kind=sandbox if mode == "code" else "none")  # the game needs none; a program does
        game = captures.play(model, policy, out, box)
        run_dir, reached = game.run_dir, captures.played(game.run_dir) == captures.best_capture()
    else:
        spec = RunSpec(
            load_task(str(LOOPS / "tasks" / f"{task}.yaml")), model, policy, out, sandbox=SandboxSpec(kind=sandbox)
        )
        summary, run_dir = start(spec)
        reached = summary.stop_reason == "goal_verified"
    wall = time.perf_counter() - began
    events = read_events(run_dir)
    replies = [e for e in events if isinstance(e, ModelReplied)]
    ran = sum(
        isinstance(e, ToolObserved) and e.observation.tool != "run_code" or isinstance(e, InnerObserved) for e in events
    )
    stop = next((e.reason for e in reversed(events) if isinstance(e, RunStopped)), "none")
    bad = [e.observation.text for e in events if isinstance(e, ToolObserved) and e.observation.status != "ok"]
    tokens = sum(e.counted_tokens or 0 for e in replies)
    failed = "" if reached or not bad else bad[0][:500]
    return Row(sandbox, task, mode, reached, len(replies), tokens, ran, round(wall, 2), stop, failed)


def table(rows: list[Row], sandbox: str) -> tuple[list[str], bool]:
    by = {(r.task, r.mode): r for r in rows if r.sandbox == sandbox}
    lines = [
        f"### {sandbox} sandbox",
        "",
        "| task | end state (calls / code) | model calls (calls / code) | prompt tokens (calls / code) | tool calls run | wall s |",
        "|---|---|---|---|---|---|",
    ]
    total = {m: [0, 0] for m in MODES}
    same = True
    for task in TASKS:
        a, b = by[(task, "calls")], by[(task, "code")]
        same &= a.reached and b.reached
        for m, r in (("calls", a), ("code", b)):
            total[m][0] += r.model_calls
            total[m][1] += r.prompt_tokens
        lines.append(
            f"| {task} | {'ok' if a.reached else 'MISSED'} / {'ok' if b.reached else 'MISSED'} | "
            f"{a.model_calls} / {b.model_calls} | {a.prompt_tokens:,} / {b.prompt_tokens:,} | "
            f"{a.tool_calls} / {b.tool_calls} | {a.wall_s:.1f} / {b.wall_s:.1f} |"
        )
    calls_ratio = total["calls"][0] / total["code"][0]
    saved = 1 - total["code"][1] / total["calls"][1]
    lines.append(
        f"| **suite** | {'same' if same else 'DIFFERENT'} | {total['calls'][0]} / {total['code'][0]} "
        f"(**{calls_ratio:.1f}x** fewer) | {total['calls'][1]:,} / {total['code'][1]:,} (**{saved:.0%}** fewer) | | |"
    )
    met = same and calls_ratio >= 3 and saved >= 0.5
    lines += [
        "",
        f"goal (same end states, >= 3x fewer model calls, >= 50% fewer prompt tokens): {'met' if met else 'MISSED'}",
    ]
    return lines, met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", action="append", choices=["local", "docker"])
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args()
    sandboxes = args.sandbox or ["local", "docker"]
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-code-mode-") as tmp:
        for sandbox in sandboxes:
            for task in TASKS:
                for mode in MODES:
                    rows.append(run(task, mode, sandbox, Path(tmp) / sandbox / task / mode))
                    print(f"  {sandbox} {task} {mode}: {rows[-1]}", flush=True)
    ok = True
    for sandbox in sandboxes:
        lines, met = table(rows, sandbox)
        ok &= met
        print("\n" + "\n".join(lines))
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
