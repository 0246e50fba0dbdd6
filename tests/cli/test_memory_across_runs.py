"""The agent's memory across runs: ten scripted runs in one repository share a kept store (`--memory DIR`),
each reading what the one before wrote; the batch report names the entries each run read and wrote; a run
records the digest it started from and replays exactly after the store moved on; a read-only store is
never written; a batch refuses a store holding notes written while working on its own instance."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from agent.memory_dir import MemoryDir, load, on_disk
from agent.recorded.replay import replay
from cli.main import app
from core.memory_entries import digest, files_of
from evals.probes.across_runs import REPO, script
from tests.evals.tasks.conftest import TASKS

RUNS = 10


def harness(*args: str):
    return CliRunner().invoke(app, list(args))


def test_ten_runs_in_one_repository_each_read_what_the_one_before_wrote(tmp_path):
    store, out = tmp_path / "memory", tmp_path / "batch"
    task = tmp_path / "task.yaml"
    task.write_text(yaml.safe_dump({"id": "demo", "prompt": "Work on the repository.", "files": REPO}))
    for k in range(1, RUNS + 1):
        model = tmp_path / f"run{k}.yaml"
        model.write_text(yaml.safe_dump(script(k)))
        done = harness(
            "run", "--task", str(task), "--model", f"scripted:{model}", "--out", str(out),
            "--memory", f"{store}:rw", "--memory-key", "demo/repo",
        )  # fmt: skip
        assert done.exit_code == 0, done.output
    kept = MemoryDir(store, "demo/repo")
    ledger = load(kept)
    assert files_of(ledger)["/memories/progress.md"] == f"runs done: {RUNS}\n"
    assert on_disk(kept.folder / "memories")["/memories/runs/run-10.md"] == b"run 10 looked at src/app.py\n"

    runs = sorted(out.iterdir(), key=lambda d: json.loads((d / "run.json").read_text())["started_at"])
    starts = [json.loads((d / "run.json").read_text())["memory"] for d in runs]
    assert [s["entries"] for s in starts] == [2 * k for k in range(RUNS)]  # each run adds two entries
    assert starts[0]["digest"] == digest([]) and starts[3]["digest"] == digest(ledger[:6])

    report = harness("report", str(out), "--format", "md")
    assert report.exit_code == 0, report.output
    rows = {line.split(" | ")[0].lstrip("| "): line for line in report.output.splitlines() if line.startswith("| 2")}
    for k in range(2, RUNS + 1):
        mine, before = runs[k - 1].name, runs[k - 2].name
        row = rows[mine]
        assert f"{before}/2" in row and before in row.split(" | ")[3]  # it read run k-1's note, and says whose
        assert f"{mine}/2 /memories/runs/run-{k}.md" in row

    # A run started from the store as it was; the store moved on since, and the replay is still exact.
    again = replay(runs[4], out=tmp_path / "replay")
    assert again.harness == []
    assert on_disk(again.replay_dir / "memories") == on_disk(runs[4] / "memories")


def test_a_read_only_store_is_read_and_never_written(tmp_path):
    store = tmp_path / "memory"
    first = tmp_path / "one.yaml"
    first.write_text(yaml.safe_dump(script(1)))
    assert (
        harness(
            "run", "--task", "t", "--model", f"scripted:{first}", "--out", str(tmp_path / "a"), "--memory", str(store)
        ).exit_code
        == 0
    )
    before = (MemoryDir(store).folder / "ledger.jsonl").read_bytes()
    second = tmp_path / "two.yaml"
    second.write_text(yaml.safe_dump(script(2)))
    done = harness(
        "run", "--task", "t", "--model", f"scripted:{second}", "--out", str(tmp_path / "b"), "--memory", f"{store}:ro"
    )
    assert done.exit_code == 0, done.output
    assert (MemoryDir(store).folder / "ledger.jsonl").read_bytes() == before
    (run_dir,) = (tmp_path / "b").iterdir()
    assert (run_dir / "memories" / "progress.md").read_text() == "runs done: 2\n"  # the run's own copy changed
    missing = harness(
        "run",
        "--task",
        "t",
        "--model",
        f"scripted:{second}",
        "--out",
        str(tmp_path / "c"),
        "--memory",
        f"{tmp_path / 'none'}:ro",
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_a_batch_refuses_a_store_holding_notes_written_on_its_own_instance(docker_ready, tmp_path):
    note = tmp_path / "note.yaml"
    note.write_text(yaml.safe_dump([
        {"tool_calls": [{"name": "memory", "arguments": {"command": "create", "path": "/memories/seen.md", "file_text": "seen\n"}}]},
        {"tool_calls": [{"name": "submit", "arguments": {"answer": "done"}}]},
    ]))  # fmt: skip
    (task,) = [d for d in sorted(TASKS.iterdir()) if d.is_dir()][:1]
    common = ["tasks", "run", str(TASKS), "--only", task.name, "--model", f"scripted:{note}", "--memory", str(tmp_path / "m"),
              "--base-image", "python:3.13-slim-bookworm=harness-base:bookworm-1"]  # fmt: skip
    first = harness(*common, "--out", str(tmp_path / "first"))
    assert first.exit_code == 0, first.output
    assert [e.instance for e in load(MemoryDir(tmp_path / "m"))] == [task.name]
    second = harness(*common, "--out", str(tmp_path / "second"))
    said = " ".join(second.output.split())
    assert second.exit_code == 2, second.output
    assert f"holds entries written while working on instances this batch is scored on ({task.name}: 1 entries" in said
    assert not any(Path(tmp_path / "second").rglob("*"))  # refused before any run started, leaving nothing
