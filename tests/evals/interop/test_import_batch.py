"""A folder of trajectories becomes a batch folder that `harness report`, `rerender` and `ab` read as they read
`harness swe`'s: one run per file, a bad file skipped with one line, and importing again changes nothing."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from cli.main import app
from evals.interop.imports.write import STAGING
from tests.evals.interop import documents as docs
from tests.evals.interop.test_published import published

runner = CliRunner()
IDS = ("repo__repo-1", "repo__repo-2", "repo__repo-3")
ZSTANDARD = 93  # the zip compression method current Inspect writes .eval files with


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


def test_a_predictions_file_beside_published_trajectories_is_passed_over_on_stderr_and_exits_0(tmp_path):
    """The Gemini folder's own preds.json (tests/fixtures/imports/beside) lies beside its trajectories."""
    preds = published("beside") / "preds.json"
    trajs = tmp_path / "trajs"
    trajs.mkdir()
    for path in [preds, *sorted(published("mini-swe-agent").glob("*.traj.json"))]:
        shutil.copy(path, trajs / path.name)
    result = invoke("import", str(trajs), "--out", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert "passed over (not a trajectory):" in result.stderr and "preds.json" in result.stderr
    assert "preds.json" not in result.stdout
    assert "5 files: 4 runs (4 imported, 0 already there), 0 files skipped, 1 passed over" in result.stdout
    record = json.loads((tmp_path / "runs" / "import-trajs" / "batch.json").read_text())["imported"]
    assert record["failed"] == [] and record["passed_over"][0]["file"].endswith("preds.json")


def test_a_folder_of_nothing_but_other_files_is_an_error_and_leaves_no_batch(tmp_path):
    folder = tmp_path / "other"
    docs.write(folder / "preds.json", {"repo__repo-1": {"model_patch": docs.PATCH}})
    result = invoke("import", str(folder), "--out", str(tmp_path / "runs"))
    assert result.exit_code == 2 and "None of the 1 files" in result.output
    assert not (tmp_path / "runs" / "import-other").exists()


def zstd_eval(tmp: Path) -> tuple[Path, Path]:
    """A published deflated `.eval` and the same log as current Inspect writes it: zstd-compressed."""
    inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect-ai (the interop extra) writes the zstd log")
    deflated = published("inspect") / "log_message_deduplication.eval"
    path = tmp / "zstd" / deflated.name
    path.parent.mkdir(parents=True)
    inspect_log.write_eval_log(inspect_log.read_eval_log(str(deflated)), str(path))
    assert {i.compress_type for i in zipfile.ZipFile(path).infolist()} == {ZSTANDARD}
    return deflated, path


def test_a_zstd_eval_log_imports_as_its_deflated_twin_does_alone_and_in_a_folder(tmp_path):
    deflated, zstd = zstd_eval(tmp_path)
    alone = invoke("import", str(zstd), "--out", str(tmp_path / "alone"))
    assert alone.exit_code == 0, alone.output
    twin = invoke("import", str(deflated), "--out", str(tmp_path / "twin"))
    steps = [fold(read_events(Path(r.output.split("run directory: ")[1].strip()))).steps for r in (alone, twin)]
    assert [(s.reply, s.observations) for s in steps[0]] == [(s.reply, s.observations) for s in steps[1]]
    shutil.copy(deflated, zstd.parent / "deflated.eval")
    (zstd.parent / "cut.eval").write_bytes(zstd.read_bytes()[:300])  # a bad file never aborts the batch
    folder = invoke("import", str(zstd.parent), "--out", str(tmp_path / "folder"))
    assert folder.exit_code == 1, folder.output
    assert "3 files: 2 runs (2 imported, 0 already there), 1 files skipped" in folder.output
    assert (tmp_path / "folder" / "import-zstd" / "batch.json").is_file()
