"""The agent's memory across runs: ten scripted runs in one repository share a kept store, run k reading what
run k-1 wrote; then the batch report's memory table, an exact replay of a run after the store moved on, and
a tasks batch refused for a store holding notes written on its own instance.

Each run (evals.probes.across_runs) views /memories, views run k-1's note, bumps a progress counter and writes
its own note, through the real CLI (`harness run --memory DIR:rw --memory-key demo/repo`). The refusal runs one bundled task in
Docker (`harness tasks run --memory DIR`), then the same batch again.

    .venv/bin/python benchmarks/bench_memory_across_runs.py [--runs 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.memory_dir import MemoryDir, load, on_disk  # noqa: E402
from agent.recorded.replay import replay  # noqa: E402
from cli.main import app  # noqa: E402
from core.memory_entries import digest, files_of  # noqa: E402
from evals.probes.across_runs import REPO, SUBMIT, call, script  # noqa: E402

TASKS = Path(__file__).resolve().parent.parent / "tests" / "evals" / "tasks" / "tasks"


def harness(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.output


def chain(tmp: Path, runs: int) -> dict:
    tmp.mkdir()
    store, out, task = tmp / "memory", tmp / "batch", tmp / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "demo", "prompt": "Work on the repository.", "files": REPO}))
    for k in range(1, runs + 1):
        model = tmp / f"run{k}.yaml"
        model.write_text(yaml.safe_dump(script(k)))
        code, said = harness(
            "run", "--task", str(task), "--model", f"scripted:{model}", "--out", str(out),
            "--memory", f"{store}:rw", "--memory-key", "demo/repo",
        )  # fmt: skip
        if code != 0:
            raise SystemExit(f"run {k} exited {code}: {said}")
    ledger = load(MemoryDir(store, "demo/repo"))
    dirs = sorted(out.iterdir(), key=lambda d: json.loads((d / "run.json").read_text())["started_at"])
    code, report = harness("report", str(out), "--format", "md")
    memory = report[report.index("## Memory") :].split("\n\n")[1].splitlines()  # the heading, then the table
    rows = [line for line in memory if line.startswith("| 2")]
    chained = [
        dirs[k - 2].name in rows[k - 1].split(" | ")[3] and f"/memories/runs/run-{k}.md" in rows[k - 1]
        for k in range(2, runs + 1)
    ]
    again = replay(dirs[runs // 2 - 1], out=tmp / "replay")
    return {
        "runs": runs,
        "started_from_entries": [json.loads((d / "run.json").read_text())["memory"]["entries"] for d in dirs],
        "first_digest_is_empty": json.loads((dirs[0] / "run.json").read_text())["memory"]["digest"] == digest([]),
        "runs_that_read_the_previous_runs_note": sum(chained),
        "progress_at_the_end": files_of(ledger)["/memories/progress.md"],
        "entries_at_the_end": len(ledger),
        "replayed_run": runs // 2,
        "replay_differences": len(again.harness),
        "replay_store_identical": on_disk(again.replay_dir / "memories") == on_disk(dirs[runs // 2 - 1] / "memories"),
        "report_exit": code,
        "report_memory_table": memory,
    }


def guard(tmp: Path) -> dict:
    tmp.mkdir()
    note = tmp / "note.yaml"
    note.write_text(yaml.safe_dump([
        call(command="create", path="/memories/seen.md", file_text="seen\n"),
        SUBMIT,
    ]))  # fmt: skip
    task = sorted(d.name for d in TASKS.iterdir() if d.is_dir())[0]
    common = ["tasks", "run", str(TASKS), "--only", task, "--model", f"scripted:{note}", "--memory", str(tmp / "m"),
              "--base-image", "python:3.13-slim-bookworm=harness-base:bookworm-1"]  # fmt: skip
    first, _ = harness(*common, "--out", str(tmp / "first"))
    second, said = harness(*common, "--out", str(tmp / "second"))
    return {
        "task": task,
        "first_exit": first,
        "second_exit": second,
        "second_said": " ".join(said.split()),
        "second_started_runs": sum(1 for _ in (tmp / "second").rglob("events.jsonl")),
        "second_left_files": sorted(str(p.relative_to(tmp)) for p in (tmp / "second").rglob("*") if p.is_file()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = chain(Path(tmp) / "chain", args.runs)
        took = time.perf_counter() - began
        refused = guard(Path(tmp) / "guard")
    print(f"{args.runs} scripted runs sharing one kept memory (key demo/repo), local sandbox; {took:.1f} s\n")
    print("\n".join(figures["report_memory_table"]))
    print(f"\nentries each run started from: {figures['started_from_entries']}")
    print(f"runs that read the note the run before wrote (report): {figures['runs_that_read_the_previous_runs_note']}")
    print(
        f"store at the end: {figures['entries_at_the_end']} entries, progress.md = {figures['progress_at_the_end']!r}"
    )
    print(
        f"replay of run {figures['replayed_run']} after the store moved on: {figures['replay_differences']} "
        f"differences, store identical byte for byte: {figures['replay_store_identical']}"
    )
    print(
        f"\ncontamination guard (tasks run --only {refused['task']}, Docker): first batch exit {refused['first_exit']}, "
        f"same batch again exit {refused['second_exit']}, runs started {refused['second_started_runs']}, "
        f"files left {len(refused['second_left_files'])}:\n"
        f"  {refused['second_said']}"
    )
    if args.json:
        args.json.write_text(json.dumps({"chain": figures, "guard": refused}, indent=2) + "\n")


if __name__ == "__main__":
    main()
