"""`harness import --grades FILE`: a SWE-bench grading result, in any of the shapes SWE-bench's tools write, gives
each imported run its verdict, so reports and `harness ab` judge on resolved rather than on submitted. Importing
again is idempotent; a bad grades file stops the import before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.evals.interop import documents as docs

runner = CliRunner()
IDS = ("repo__repo-1", "repo__repo-2", "repo__repo-3")
RESOLVED = {"repo__repo-1": True, "repo__repo-2": False, "repo__repo-3": True}


def invoke(*args: Any):
    return runner.invoke(app, [str(a) for a in args])


def trajectories(root: Path) -> Path:
    for instance in IDS:
        docs.write(root / instance / f"{instance}.traj.json", docs.mini_v1(instance))
    return root


def harness_report(path: Path) -> Path:
    """The official harness's run report (its other keys as it writes them)."""
    yes = [i for i, ok in RESOLVED.items() if ok]
    no = [i for i, ok in RESOLVED.items() if not ok]
    return docs.write(
        path,
        {"total_instances": 3, "submitted_ids": list(IDS), "completed_ids": list(IDS), "resolved_ids": yes}
        | {"unresolved_ids": no, "empty_patch_ids": [], "error_ids": [], "schema_version": 2},
    )


def results_summary(path: Path) -> Path:
    """As the Gemini 3 Pro folder has it (swebench_results/20251118_gemini-3-pro-74pct/results_summary.json)."""
    instances = [{"instance_id": i, "resolved": ok, "patch_applied": True} for i, ok in RESOLVED.items()]
    return docs.write(path, {"total": 3, "passed": 2, "failed": 1, "pass_rate": 66.7, "instances": instances})


def log_folder(path: Path) -> Path:
    """logs/<instance>/report.json: keyed by instance, as the official harness writes it, or bare, as the
    Gemini folder's logs are."""
    for n, (instance, ok) in enumerate(RESOLVED.items()):
        report = {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": ok}
        docs.write(path / instance / "report.json", {instance: report} if n % 2 else report)
    return path


def verdicts(batch: Path) -> dict[str, bool]:
    out = {}
    for run in batch.iterdir():
        if (run / "grade.json").is_file():
            [(instance, grade)] = json.loads((run / "grade.json").read_text()).items()
            out[instance] = grade["resolved"]
    return out


@pytest.mark.parametrize("shape", [harness_report, results_summary, log_folder])
def test_each_grading_shape_gives_every_run_its_verdict_and_reports_judge_on_it(tmp_path, shape):
    grades = shape(tmp_path / ("logs" if shape is log_folder else "grades.json"))
    result = invoke("import", trajectories(tmp_path / "trajs"), "--out", tmp_path / "runs", "--grades", grades)
    assert result.exit_code == 0, result.output
    assert "2 resolved, 1 not resolved" in result.output and "warning" not in result.output
    batch = tmp_path / "runs" / "import-trajs"
    assert verdicts(batch) == RESOLVED
    md = invoke("report", batch, "--format", "md").output
    assert "**succeeded** 67% (2 of 3)" in md  # every run submitted: success is resolved, not submission
    assert md.count("| not resolved |") == 1 and md.count("| resolved |") == 2
    recorded = json.loads((batch / "batch.json").read_text())["imported"]["grades"]
    assert recorded == {"source": grades.name, "resolved": 2, "unresolved": 1, "ungraded": [], "unknown": 0}


def test_ab_on_two_graded_imports_judges_resolved_and_keeps_submitted_apart(tmp_path):
    trajs = trajectories(tmp_path / "trajs")
    other = tmp_path / "other"
    for instance in IDS:
        docs.write(other / f"{instance}.traj.json", docs.mini_v1(instance))
    all_resolved = docs.write(tmp_path / "all.json", {"resolved_ids": list(IDS), "unresolved_ids": []})
    assert (
        invoke("import", trajs, "--out", tmp_path / "runs", "--grades", results_summary(tmp_path / "g.json")).exit_code
        == 0
    )
    assert invoke("import", other, "--out", tmp_path / "runs", "--grades", all_resolved).exit_code == 0
    a, b = tmp_path / "runs" / "import-trajs", tmp_path / "runs" / "import-other"
    result = invoke("ab", a, b, "--out", tmp_path, "--resamples", 200)
    assert result.exit_code == 0, result.output
    by = {
        m["name"]: m
        for m in json.loads((tmp_path / "ab-import-trajs-vs-import-other" / "ab.json").read_text())["metrics"]
    }
    assert by["success"]["mean_a"] == pytest.approx(2 / 3) and by["success"]["mean_b"] == 1.0
    assert by["submitted"]["mean_a"] == by["submitted"]["mean_b"] == 1.0  # shown apart once success is a grade


def test_importing_again_with_or_without_grades_keeps_what_is_there(tmp_path):
    trajs, out = trajectories(tmp_path / "trajs"), tmp_path / "runs"
    grades = results_summary(tmp_path / "grades.json")
    batch = out / "import-trajs"
    assert invoke("import", trajs, "--out", out).exit_code == 0  # first without grades: outcomes unknown
    assert verdicts(batch) == {}
    events = {run.name: (run / "events.jsonl").stat().st_mtime_ns for run in batch.iterdir() if run.is_dir()}
    graded = invoke("import", trajs, "--out", out, "--grades", grades)
    assert graded.exit_code == 0 and "(0 imported, 3 already there)" in graded.output
    assert verdicts(batch) == RESOLVED  # a run imported before without grades gets them; its journal is untouched
    assert {run: (batch / run / "events.jsonl").stat().st_mtime_ns for run in events} == events
    stamps = {run: (batch / run / "grade.json").stat().st_mtime_ns for run in events}
    again = invoke("import", trajs, "--out", out, "--grades", grades)
    assert again.exit_code == 0 and {run: (batch / run / "grade.json").stat().st_mtime_ns for run in events} == stamps
    without = invoke("import", trajs, "--out", out)
    assert without.exit_code == 0 and verdicts(batch) == RESOLVED  # grades given once are kept
    flipped = docs.write(
        tmp_path / "flipped.json", {"resolved_ids": ["repo__repo-2"], "unresolved_ids": ["repo__repo-1"]}
    )
    assert invoke("import", trajs, "--out", out, "--grades", flipped).exit_code == 0
    assert verdicts(batch) == {"repo__repo-1": False, "repo__repo-2": True, "repo__repo-3": True}  # a new grade wins


def test_unknown_and_ungraded_instances_get_one_warning_line_each(tmp_path):
    grades = docs.write(
        tmp_path / "grades.json",
        {
            "instances": [
                {"instance_id": "repo__repo-1", "resolved": True},
                {"instance_id": "nope-9", "resolved": False},
            ]
        },
    )
    result = invoke("import", trajectories(tmp_path / "trajs"), "--out", tmp_path / "runs", "--grades", grades)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 3
    assert "warning: grades.json: nope-9 names no run of this import; its grade is not used" in lines
    assert sum("has no grade for repo__repo-2; its outcome stays unknown" in line for line in lines) == 1
    one = invoke(
        "import",
        tmp_path / "trajs" / "repo__repo-3" / "repo__repo-3.traj.json",
        "--out",
        tmp_path / "one",
        "--grades",
        grades,
    )
    assert one.exit_code == 0 and "has no grade for repo__repo-3" in one.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "is not JSON"),
        (json.dumps({"runs": []}), "is not a SWE-bench grading result"),
        (
            json.dumps({"instances": [{"instance_id": "a", "resolved": "yes"}]}),
            "instances[0] (a) has no true/false resolved",
        ),
        (json.dumps({"resolved_ids": "a"}), "`resolved_ids` is not a list of instance ids"),
        (b"\xff\xfe{}", "is not UTF-8"),
        (None, "holds no report.json"),
    ],
)
def test_a_bad_grades_file_is_a_clear_error_and_nothing_is_written(tmp_path, content, said):
    grades = tmp_path / "grades"
    if content is None:
        grades.mkdir()
    elif isinstance(content, bytes):
        grades.write_bytes(content)
    else:
        grades.write_text(content)
    result = invoke("import", trajectories(tmp_path / "trajs"), "--out", tmp_path / "runs", "--grades", grades)
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "runs").exists()
