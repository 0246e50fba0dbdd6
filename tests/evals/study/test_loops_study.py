"""One `harness study` command compares calls against code on the loop-shaped suite: a scripted model per task
(`{task}` in the model string), both policies, and per task the model calls, tokens, cached share and cost with
paired intervals; the capture task is judged by the move it played."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app

LOOPS = "evals/loops"


def test_one_study_command_compares_calls_and_code_task_by_task(tmp_path):
    args = [
        "study",
        "--model",
        f"scripted:{LOOPS}/solutions/{{task}}.yaml",
        "--task",
        "rename",
        "--task",
        "captures",
        "--policy",
        f"{LOOPS}/policies/calls.toml",
        "--policy",
        f"{LOOPS}/policies/code.toml",
        "--seeds",
        "0,1",
        "--concurrency",
        "2",
        "--sandbox",
        "local",
        "--prices",
        f"{LOOPS}/prices.toml",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "model calls" in result.output and "cost (USD)" in result.output
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    study = json.loads((folder / "study.json").read_text())
    [point] = study["points"]
    assert {f["policy"]: (f["finished"], f["runs"]) for f in point["policies"]} == {"calls": (4, 4), "code": (4, 4)}
    [pair] = point["pairs"]
    rows = {(t["task"], t["label"]): t for t in pair["tasks"]}
    assert {task for task, _ in rows} == {"rename", "captures"}
    assert {label for _, label in rows} == {"model calls", "prompt tokens", "cached share", "ideal reuse", "cost (USD)"}
    calls = rows[("rename", "model calls")]
    assert (calls["mean_a"], calls["mean_b"], calls["diff"], calls["low"], calls["high"]) == (10, 1, -9, -9, -9)
    assert rows[("captures", "model calls")]["diff"] == -2
    assert rows[("rename", "cost (USD)")]["diff"] < 0 and rows[("rename", "prompt tokens")]["diff"] < 0
    html = (folder / "study.html").read_text()
    assert "Per task" in html and "captures" in html
