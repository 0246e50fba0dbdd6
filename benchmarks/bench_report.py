"""How long `harness report` takes on a long run, and how large report.html gets; and what
each kind of report looks like.

Makes a run with the real loop (scripted model, local sandbox): STEPS steps reading a log,
every tenth step reading 300 lines, so large observations are clipped and linked. Then
times loading and rendering the report and prints its size. The acceptance bound is a
1,000-step report in under 10 s and under 10 MB.

With --screenshots DIR it also plays two small chess batches (a seeded random player against
a weakened Stockfish, with and without long reasoning) and writes, at 1280×800 in headless
Chromium, a full-page screenshot of the run report, a chess run report, the batch report and
the A/B page of the two batches.

    .venv/bin/python benchmarks/bench_report.py [--steps 1000] [--keep DIR] [--screenshots DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.models.pricing import load_prices  # noqa: E402
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply  # noqa: E402
from agent.run.task import Task  # noqa: E402
from agent.session import RunSpec  # noqa: E402
from core.policy import HarnessPolicy, StopPolicy  # noqa: E402
from core.types import Usage  # noqa: E402
from evals.ab.compare import compare  # noqa: E402
from evals.ab.html import render as render_ab  # noqa: E402
from evals.ab.records import load_batch  # noqa: E402
from evals.reports.batch import render_batch  # noqa: E402
from evals.reports.html import render_run  # noqa: E402
from evals.reports.load import load_run, run_dirs_in  # noqa: E402

CHROMIUM = "/usr/bin/chromium"

LOG = "".join(f"log line {i:05d}\n" for i in range(1, 8001))


def script(steps: int) -> list[ScriptedReply]:
    out, prompt = [], 1500
    for i in range(1, steps):
        end = i + (300 if i % 10 == 0 else 0)
        out.append(
            ScriptedReply(
                text=f"Step {i}.",
                reasoning=f"Plan for step {i}.",
                tool_calls=[
                    ScriptedCall(name="read_file", arguments={"path": "log.txt", "start_line": i, "end_line": end})
                ],
                usage=Usage(prompt_tokens=prompt, cached_tokens=max(0, prompt - 400), completion_tokens=60),
            )
        )
        prompt += 1200 if i % 10 == 0 else 40
    out.append(
        ScriptedReply(
            text="Done.",
            tool_calls=[ScriptedCall(name="submit", arguments={"answer": "done"})],
            usage=Usage(prompt_tokens=prompt, cached_tokens=prompt - 400, completion_tokens=60),
        )
    )
    return out


def chess_pages(out: Path) -> dict[str, Path]:
    """A chess run report, a batch report and an A/B page, from two real batches of the same seeded games."""
    from evals.chess.batch import ChessBatchSpec, play_batch
    from evals.chess.game import GameRules
    from evals.chess.players import RandomPlayer

    folders = []
    for name, chars in (("reasoning", 3000), ("silent", 0)):
        _, folder = play_batch(
            ChessBatchSpec(
                4,
                lambda seed, chars=chars: RandomPlayer(seed, reasoning_chars=chars),
                "stockfish:skill=0",
                policy=HarnessPolicy(name=name),
                out=out / name,
                seed=0,
                rules=GameRules(max_plies=40),
                analysis_depth=6,
            )
        )
        folders.append(folder)
    prices = load_prices()
    runs = [load_run(d, prices) for d in run_dirs_in(folders[0])]
    a, b = (load_batch(f, prices) for f in folders)
    ab, _ = render_ab(compare(a, b, folders[0].name, folders[1].name, primary="prompt_tokens"), out / "ab")
    return {"chess-run": render_run(runs[0]), "batch": render_batch(folders[0], runs), "ab": ab}


def screenshots(pages: dict[str, Path], to: Path) -> None:
    from playwright.sync_api import sync_playwright

    to.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for name, path in pages.items():
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(path.as_uri())
            shot = to / f"{name}.png"
            page.screenshot(path=str(shot), full_page=True)
            wide = page.evaluate("document.documentElement.scrollWidth")
            print(f"screenshot: {shot} (page {wide} px wide at a 1280 px viewport)")
            page.close()
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="make the run here and keep it (default: a temporary folder)")
    ap.add_argument("--screenshots", type=Path, help="write a screenshot of each kind of report into this folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        start = time.perf_counter()
        task = Task(id="long", prompt="Read log.txt and submit.", files={"log.txt": LOG})
        policy = HarnessPolicy(name="long", stop=StopPolicy(max_steps=args.steps + 1))
        _, run_dir = start(RunSpec(task, ScriptedModel(script(args.steps), name="scripted:long"), policy, out))
        made = time.perf_counter() - start
        start = time.perf_counter()
        run = load_run(run_dir, load_prices(), price_model="openai:gpt-5")
        loaded = time.perf_counter() - start
        path = render_run(run)
        total = time.perf_counter() - start
        size = path.stat().st_size
        linked = len(list((run_dir / "artifacts" / "report").glob("*")))
        print(f"run: {len(run.steps)} steps made by the loop in {made:.1f} s; {len(run.findings)} findings")
        print(
            f"report: {total:.2f} s (load {loaded:.2f} s, render {total - loaded:.2f} s), "
            f"{size / 1e6:.2f} MB, {linked} long texts linked instead of inlined"
        )
        print(
            f"bounds: time {'ok' if total < 10 else 'OVER'} (< 10 s), size {'ok' if size < 10 * 2**20 else 'OVER'} (< 10 MB)"
        )
        if args.screenshots:
            screenshots({"run": path, **chess_pages(out)}, args.screenshots)


if __name__ == "__main__":
    main()
