"""`harness rerender` as a user runs it on imported runs: the table with counterfactual cost and fit, `--json`
(nothing else on stdout), and the batch form with intervals across runs, a damaged run named and left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.evals.interop import documents

runner = CliRunner()


def import_batch(tmp_path: Path) -> Path:
    """Four runs of two models: mini-swe-agent v1 (Gemini through OpenRouter) and v2 (Claude Sonnet 4.5)."""
    src = tmp_path / "trajs"
    documents.write(src / "repo__repo-1.traj.json", documents.mini_v1("repo__repo-1"))
    documents.write(src / "repo__repo-2.traj.json", documents.mini_v1("repo__repo-2", submitted=False))
    documents.write(src / "repo__repo-3.traj.json", documents.mini_v2_toolcall("repo__repo-3"))
    documents.write(src / "repo__repo-4.traj.json", documents.mini_v2_toolcall("repo__repo-4"))
    result = runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / "import-trajs"


def one_run(batch: Path) -> Path:
    return next(d for d in sorted(batch.iterdir()) if d.name.startswith("repo__repo-1"))


def test_the_table_shows_the_counterfactual_cost_beside_the_recorded_one_and_the_fit(tmp_path):
    run_dir = one_run(import_batch(tmp_path))
    result = runner.invoke(app, ["rerender", str(run_dir), "--policy", "lean", "--policy", "compact_cache_aware"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Priced as google:gemini-3-pro-preview: $2 per million input tokens, $0.2 cached, $12 output" in out
    assert "Fit of the recorded policy's rebuilt prompts" in out and "over 5 steps" in out
    assert "counterfactual cost" in out and "as recorded" in out and "$0.0150" in out  # the document's own cost
    assert "lean" in out and "compact_cache_aware" in out


def test_json_is_the_whole_of_stdout_and_holds_the_table_and_the_steps(tmp_path):
    run_dir = one_run(import_batch(tmp_path))
    args = ["rerender", str(run_dir), "--policy", "lean", "--json", "--per-step", "--scale-to-recorded"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["policy"] for p in data["policies"]] == ["mini-swe-agent (recorded)", "lean"]
    assert data["price"]["model"] == "google:gemini-3-pro-preview" and data["price"]["cached_input_per_million"] == 0.2
    assert data["fit"]["steps"] == 5 and data["scaled_to_recorded"] == data["fit"]["scale"]
    assert data["recorded"]["cost_usd"] == 0.015 and data["recorded"]["prompt_tokens"] == 6000
    rows = data["per_step"]
    assert [r["recorded_prompt_tokens"] for r in rows] == [1000, 1100, 1200, 1300, 1400]
    own = data["policies"][0]
    assert [p["policy"] for p in rows[0]["policies"]] == ["mini-swe-agent (recorded)", "lean"]
    assert sum(r["policies"][0]["prompt_tokens"] for r in rows) == own["prompt_tokens"]
    assert sum(r["policies"][1]["cost_usd"] for r in rows) == pytest.approx(data["policies"][1]["cost_usd"])


def test_a_batch_gets_one_row_per_policy_with_intervals_across_runs(tmp_path):
    batch = import_batch(tmp_path)
    damaged = next(d for d in sorted(batch.iterdir()) if d.name.startswith("repo__repo-4"))
    lines = (damaged / "events.jsonl").read_text().splitlines(keepends=True)
    (damaged / "events.jsonl").write_text("".join(lines[:3] + lines[4:]))  # an event lost in the middle
    result = runner.invoke(
        app, ["rerender", str(batch), "--policy", "lean", "--policy", "compact_cache_aware", "--json"]
    )
    assert result.exit_code == 1, result.output  # a run was left out
    assert "left out:" in result.stderr and damaged.name in result.stderr
    data = json.loads(result.stdout)
    assert data["runs"] == 3 and len(data["skipped"]) == 1 and damaged.name in data["skipped"][0]
    recorded, lean, cache_aware = data["policies"]
    assert (recorded["policy"], lean["policy"], cache_aware["policy"]) == (
        "mini-swe-agent (recorded)",
        "lean",
        "compact_cache_aware",
    )
    for row in data["policies"]:
        assert row["runs"] == 3 and row["priced_runs"] == 3  # Gemini and Claude Sonnet both in the price table
        for key in ("prompt_tokens", "peak_context", "cost_usd", "ideal_cached_share_per_run"):
            s = row[key]
            assert s["low"] < s["mean"] < s["high"], (row["policy"], key, s)  # runs differ: intervals have width
        assert row["prompt_tokens"]["mean"] * 3 == pytest.approx(row["prompt_tokens_total"])
    assert data["recorded"]["cost_usd_total"] == pytest.approx(0.015 * 2 + 0.06)
    assert data["fit"]["runs"] == 3 and data["fit"]["scale"]["mean"] > 0

    table = runner.invoke(app, ["rerender", str(batch), "--policy", "lean"])
    assert table.exit_code == 1 and "Batch import-trajs: 3 runs (1 left out)" in table.output
    assert "95% interval" in table.output and "as recorded" in table.output


def test_per_step_is_for_one_run(tmp_path):
    result = runner.invoke(app, ["rerender", str(import_batch(tmp_path)), "--policy", "lean", "--per-step"])
    assert result.exit_code == 2 and "--per-step is for one run" in result.output


@pytest.mark.model  # the default model's tokenizer, read from its file
def test_engine_sends_every_request_through_the_engines_prefix_cache(tmp_path):
    """The real engine (the default model's tokenizer and cache, random one-layer weights) prefills each prompt."""
    batch = import_batch(tmp_path)
    result = runner.invoke(app, ["rerender", str(one_run(batch)), "--policy", "lean", "--engine", "--json"])
    assert result.exit_code == 0, result.output
    recorded, lean = json.loads(result.stdout)["policies"]
    # Append-only: each prompt extends the last, so the cache serves all but the new tokens, less its block rounding.
    assert 0 < recorded["engine_cached_share"] <= recorded["ideal_cached_share"] + 0.05
    assert recorded["engine_cached_share_all_requests"] == recorded["engine_cached_share"]  # no summariser
    assert 0 <= lean["engine_cached_share"] < 1

    rows = json.loads(runner.invoke(app, ["rerender", str(batch), "--policy", "lean", "--engine", "--json"]).stdout)
    for row in rows["policies"]:
        share = row["engine_cached_share"]
        assert 0 < share["mean"] <= 1 and share["low"] <= share["mean"] <= share["high"], (row["policy"], share)
