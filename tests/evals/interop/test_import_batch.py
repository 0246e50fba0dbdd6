"""A folder of trajectories becomes a batch folder that `harness report`, `rerender` and `ab` read as they read
`harness swe`'s: one run per file, a bad file skipped with one line, and importing again changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.journal.store import read_run_info
from cli.main import app
from evals.interop.imports.write import STAGING
from tests.evals.interop import documents as docs

runner = CliRunner()
IDS = ("repo__repo-1", "repo__repo-2", "repo__repo-3")


def invoke(*args: str):
    return runner.invoke(app, [*args])


def runs_in(batch: Path) -> list[Path]:
    return sorted(p for p in batch.iterdir() if (p / "run.json").is_file())


def mini_folder(root: Path) -> Path:
    for i, instance in enumerate(IDS):  # laid out as mini-swe-agent does: trajs/<id>/<id>.traj.json
        docs.write(root / instance / f"{instance}.traj.json", docs.mini_v1(instance, submitted=i != 2))
    (root / "minisweagent.log").write_text("not a trajectory, and not searched: .log\n")
    return root


def test_a_folder_with_a_broken_file_imports_the_rest_and_names_the_broken_one(tmp_path):
    trajs = mini_folder(tmp_path / "trajs")
    text = json.dumps(docs.mini_v1("repo__repo-4"))
    (trajs / "broken.traj.json").write_text(text[:500])
    result = invoke("import", str(trajs), "--out", str(tmp_path / "runs"))
    assert result.exit_code == 1, result.output
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped:")]
    assert len(skipped) == 1 and "broken.traj.json" in skipped[0] and "truncated" in skipped[0]
    assert "4 files: 3 runs (3 imported, 0 already there), 1 files skipped" in result.output
    batch = tmp_path / "runs" / "import-trajs"
    assert [read_run_info(d).task["id"] for d in runs_in(batch)] == list(IDS)
    record = json.loads((batch / "batch.json").read_text())
    assert record["model"] == "google:gemini-3-pro-preview" and record["policy"] == "mini-swe-agent"
    assert record["cost"]["cost_usd"] == 0.045 and record["imported"]["failed"][0]["file"].endswith("broken.traj.json")
    statuses = [item["status"] for item in json.loads((batch / "executor.json").read_text())["items"].values()]
    assert sorted(statuses) == ["done", "done", "done", "error"]
    predictions = [json.loads(line) for line in (batch / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == list(IDS[:2])  # the third submitted nothing
    assert predictions[0]["model_patch"] == docs.PATCH and not (batch / STAGING).exists()


def test_importing_again_finds_the_same_runs_and_leaves_them_as_they_are(tmp_path):
    trajs = mini_folder(tmp_path / "trajs")
    out = tmp_path / "runs"
    assert invoke("import", str(trajs), "--out", str(out)).exit_code == 0
    batch = out / "import-trajs"
    before = {d.name: (d / "events.jsonl").stat().st_mtime_ns for d in runs_in(batch)}
    again = invoke("import", str(trajs), "--out", str(out))
    assert again.exit_code == 0 and "3 runs (0 imported, 3 already there)" in again.output
    assert {d.name: (d / "events.jsonl").stat().st_mtime_ns for d in runs_in(batch)} == before
    statuses = {item["status"] for item in json.loads((batch / "executor.json").read_text())["items"].values()}
    assert statuses == {"reused"}
    one = next(iter(trajs.rglob("repo__repo-1.traj.json")))
    first, second = (invoke("import", str(one), "--out", str(tmp_path / "single")) for _ in range(2))
    assert "already imported" not in first.output and "already imported" in second.output
    assert first.output.splitlines()[-1] == second.output.splitlines()[-1]  # the same run directory


def test_an_import_cut_short_is_done_again_and_its_leftovers_go(tmp_path):
    trajs = mini_folder(tmp_path / "trajs")
    out = tmp_path / "runs"
    assert invoke("import", str(trajs), "--out", str(out)).exit_code == 0
    batch = out / "import-trajs"
    victim = runs_in(batch)[0]
    (victim / "summary.json").unlink()  # as if the process died before the run was whole
    (batch / STAGING / victim.name).mkdir(parents=True)
    again = invoke("import", str(trajs), "--out", str(out))
    assert again.exit_code == 0 and "(1 imported, 2 already there)" in again.output
    assert (victim / "summary.json").is_file() and not (batch / STAGING).exists()
    assert len(list(batch.glob(f".{victim.name}.incomplete-*"))) == 1  # kept aside, not deleted


def test_report_rerender_and_ab_read_imported_batches_paired_by_instance(tmp_path):
    a_files, b_files = tmp_path / "mini", tmp_path / "atif"
    for instance in IDS:
        docs.write(a_files / f"{instance}.traj.json", docs.mini_v1(instance))
        docs.write(b_files / instance / "agent" / "trajectory.json", docs.atif(instance))
    out = tmp_path / "runs"
    assert invoke("import", str(a_files), "--out", str(out)).exit_code == 0
    assert invoke("import", str(b_files), "--out", str(out)).exit_code == 0
    a, b = out / "import-mini", out / "import-atif"
    md = invoke("report", str(a), "--format", "md")
    assert md.exit_code == 0 and "**runs** 3" in md.output and "repo__repo-2" in md.output
    assert invoke("report", str(b)).exit_code == 0 and (b / "report.html").is_file()
    one = runs_in(a)[0]
    run_md = invoke("report", str(one), "--format", "md")
    assert run_md.exit_code == 0 and "Steps with no tool call | 1" in run_md.output
    again = invoke("rerender", str(one), "--policy", "lean")
    assert again.exit_code == 0 and "mini-swe-agent (recorded)" in again.output and "lean" in again.output
    ab = invoke("ab", str(a), str(b), "--resamples", "200")
    assert ab.exit_code == 0, ab.output
    data = json.loads((out / "ab-import-mini-vs-import-atif" / "ab.json").read_text())
    assert data["pairs"] == 3 and data["a_policies"] == ["mini-swe-agent"] and data["b_policies"] == ["terminus-2"]
