"""`harness study` end to end with a scripted model (a test double for the model) in the local sandbox."""

from __future__ import annotations

import json

import pytest

from agent.journal.store import read_events
from core.events import ModelReplied
from tests.evals.study.conftest import scripted, study


def test_with_a_scripted_model_each_point_writes_one_batch_folder_per_policy(scripted_study, scripted_study_json):
    points = scripted_study_json["points"]
    assert [(p["concurrency"], p["kv_cache_mb"]) for p in points] == [(1, None), (4, None)]
    batches = sorted(p.name for p in scripted_study.iterdir() if p.is_dir())
    assert batches == ["c1-kvdefault-default", "c1-kvdefault-lean", "c4-kvdefault-default", "c4-kvdefault-lean"]
    for batch in batches:
        assert (
            len([d for d in (scripted_study / batch).iterdir() if (d / "run.json").exists()]) == 4
        )  # 2 tasks × 2 seeds
    assert (scripted_study / "study.html").exists()
    assert scripted_study_json["failures"] == []


def test_with_a_scripted_model_runs_pair_by_task_and_seed_across_policies(scripted_study_json):
    for point in scripted_study_json["points"]:
        keys = {}
        for run in point["runs"]:
            keys.setdefault(run["policy"], set()).add((run["task_id"], run["seed"]))
        assert keys["default"] == keys["lean"] == {("ledger", 0), ("ledger", 1), ("inventory", 0), ("inventory", 1)}
        [pair] = point["pairs"]
        assert (pair["a"], pair["b"]) == ("default", "lean")
        assert pair["comparison"]["pairs"] == 4
        assert next(m for m in pair["comparison"]["metrics"] if m["primary"])["name"] == "prompt_tokens"
        assert {e["label"] for e in pair["extra"]} == {"cached share", "peak context"}


def test_with_a_scripted_model_policy_figures_add_up_from_the_journals(scripted_study, scripted_study_json):
    point = scripted_study_json["points"][1]
    for figures in point["policies"]:
        runs = [r for r in point["runs"] if r["policy"] == figures["policy"]]
        replies = [e for r in runs for e in read_events(scripted_study / r["run_dir"]) if isinstance(e, ModelReplied)]
        assert figures["prompt_tokens"] == sum(e.reply.usage.prompt_tokens for e in replies)
        assert figures["peak_context"] == max(e.reply.usage.prompt_tokens for e in replies)
        assert figures["ideal_reuse"] == sum(e.prefix_reused or 0 for e in replies) / sum(
            e.counted_tokens or 0 for e in replies
        )
        assert figures["steps"] == sum(r["steps"] for r in runs) == 16
        assert figures["steps_per_s"] > 0 and figures["latency_p50_s"] is not None
        # a scripted model is no engine: the figures only an engine can give are absent, not zero
        assert figures["engine"]["source"] == "none" and figures["engine"]["evicted_blocks"] is None
        assert figures["ttft_p50_s"] is None


def test_the_batch_folders_are_what_harness_ab_reads(scripted_study):
    from typer.testing import CliRunner

    from cli.main import app

    out = scripted_study.parent / "ab"
    result = CliRunner().invoke(
        app,
        [
            "ab",
            str(scripted_study / "c4-kvdefault-default"),
            str(scripted_study / "c4-kvdefault-lean"),
            "--out",
            str(out),
            "--resamples",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    [written] = out.rglob("ab.json")  # --out receives the comparison's own folder
    assert json.loads(written.read_text())["pairs"] == 4


def test_an_unknown_task_is_refused_before_anything_runs(tmp_path):
    code, output, folder = study(
        tmp_path / "out", "--model", "local", "--task", "nosuch", "--policy", "local", "--policy", "local_compact"
    )
    assert code == 2 and "Unknown study task 'nosuch'" in output and "ledger" in output
    assert folder is None


def test_a_cache_size_for_a_served_engine_is_refused(tmp_path):
    code, output, _ = study(
        tmp_path / "out",
        "--model",
        "openai-compatible:http://127.0.0.1:9/v1#m",
        "--task",
        "chess",
        "--policy",
        "default",
        "--policy",
        "lean",
        "--kv-cache-mb",
        "64",
    )
    assert code == 2 and "harness serve --kv-cache-mb" in output


def test_a_policy_named_twice_is_refused(tmp_path):
    code, output, _ = study(tmp_path / "out", "--task", "chess", "--policy", "lean", "--policy", "lean")
    assert code == 2 and "Name each task and each policy once" in output


def test_the_markdown_table_has_a_row_per_policy_at_each_point(scripted_study_json):
    from evals.study.report import markdown

    rows = markdown(scripted_study_json).splitlines()[2:]
    assert [r.split(" | ")[2] for r in rows] == ["default", "lean", "default", "lean"]
    assert all(r.count("|") == rows[0].count("|") for r in rows)


@pytest.mark.docker
def test_with_a_scripted_model_the_bundled_tasks_run_in_the_docker_sandbox(tmp_path):
    code, output, folder = scripted(tmp_path, "--seeds", "0", "--concurrency", "2")
    assert code == 0, output
    [point] = json.loads((folder / "study.json").read_text())["points"]
    for run in point["runs"]:
        events = read_events(folder / run["run_dir"])
        first = next(e for e in events if e.type == "tool_observed")
        # the task's setup wrote its large file in the container, and its tests ran there and failed
        assert "FAILED" in first.observation.text, first.observation.text
        assert json.loads((folder / run["run_dir"] / "run.json").read_text())["sandbox"] == "docker"


def test_each_sweep_chart_is_also_an_svg_file_of_its_own(scripted_study):
    import xml.etree.ElementTree as ET

    svg = "{http://www.w3.org/2000/svg}"
    files = sorted(p.name for p in scripted_study.glob("sweep-*.svg"))
    assert files == ["sweep-all-points-cached-share.svg", "sweep-all-points-throughput.svg"]
    for name in files:
        root = ET.parse(scripted_study / name).getroot()  # well-formed XML, as a browser or a README needs
        assert root.tag == f"{svg}svg"
        assert "svg.chart .tick" in root.find(f"{svg}style").text  # styled without the page's stylesheet
        assert {"default", "lean"} <= {t.text for t in root.iter(f"{svg}text")}  # the legend names the policies
