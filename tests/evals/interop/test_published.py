"""`harness import` on real published trajectories of each format (tests/fixtures/imports, sources in its
README), then `harness report`, `rerender` and `ab` on what it made. The figures asserted are the sources'
own: what the provider billed Gemini's runs, as mini-swe-agent recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]
# The files live in the checkout, or, laid by whoever may keep third-party data, in the shared/ beside it.
PLACES = (ROOT / "tests" / "fixtures" / "imports", ROOT.parent / "shared" / "fixtures" / "imports")


def published(fmt: str) -> Path:
    for place in PLACES:
        folder = place / fmt
        if folder.is_dir() and any(p.suffix in (".json", ".traj", ".eval") for p in folder.iterdir()):
            return folder
    pytest.skip(f"no published {fmt} trajectories here; tests/fixtures/imports/README.md says where they come from")


@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> dict[str, Path]:
    """Each format's folder imported once, as a batch; a format without files is left out."""
    out = tmp_path_factory.mktemp("runs")
    made = {}
    for fmt in ("mini-swe-agent", "swe-agent", "atif", "inspect"):
        try:
            folder = published(fmt)
        except pytest.skip.Exception:
            continue
        result = runner.invoke(app, ["import", str(folder), "--out", str(out)])
        assert result.exit_code == 0, result.output
        made[fmt] = out / f"import-{fmt}"
    return made


def batch(batches: dict[str, Path], fmt: str) -> Path:
    if fmt not in batches:
        published(fmt)  # skips, saying why
    return batches[fmt]


def summaries(folder: Path) -> dict[str, dict]:
    return {
        read_run_info(d).task["id"]: json.loads((d / "summary.json").read_text())
        for d in sorted(folder.iterdir())
        if (d / "summary.json").is_file()
    }


def test_gemini_runs_keep_the_usage_and_cost_the_provider_recorded(batches):
    runs = summaries(batch(batches, "mini-swe-agent"))
    short = runs["django__django-16255"]
    assert short["tokens"] == {"prompt": 61068, "completion": 2317, "cached": 33662, "cache_write": 0, "reasoning": 250}
    assert short["cost_usd"] == round(0.0893484, 6) and short["unpriced_calls"] == 0  # summary.json keeps 6 places
    assert short["steps"] == short["model_calls"] == 17 and short["tool_calls"] == {"bash": 17}
    assert 0.5 < short["prefix_reuse_rate"] < 1  # the harness's ideal, beside 55% cache hits
    assert runs["matplotlib__matplotlib-25287"]["errors"] == {"nonzero_exit": 3, "timeout": 1}
    assert runs["pydata__xarray-4629"]["errors"] == {"nonzero_exit": 2}
    assert all(
        s["stop_reason"] == "submitted" and s["outcome"]["answer"].startswith("diff --git") for s in runs.values()
    )


def test_a_format_error_is_a_reply_without_a_call_and_the_harness_note_after_it(batches):
    folder = batch(batches, "mini-swe-agent")
    run_dir = next(d for d in folder.iterdir() if d.name.startswith("django__django-13670"))
    steps = fold(read_events(run_dir)).steps
    bare = [s for s in steps if s.replied and not s.calls]
    assert len(bare) == 1 and bare[0].notes[0].text.startswith("Please always provide EXACTLY ONE action")


def test_harbors_atif_of_the_same_runs_folds_to_the_same_steps_calls_and_usage(batches):
    ours, harbors = summaries(batch(batches, "mini-swe-agent")), summaries(batch(batches, "atif"))
    for instance in ("django__django-16255", "django__django-13670"):
        a, b = ours[instance], harbors[instance]
        same = ("steps", "tokens", "tool_calls", "errors")
        assert {k: a[k] for k in same} == {k: b[k] for k in same}, instance
        assert b["cost_usd"] == pytest.approx(a["cost_usd"])  # Harbor spreads the run's cost over its steps
        assert b["stop_reason"] == "not_recorded"  # ATIF keeps no exit status


def test_swe_agent_runs_keep_their_tools_demonstration_and_totals(batches):
    folder = batch(batches, "swe-agent")
    by_id = {read_run_info(d).task["id"]: d for d in folder.iterdir() if (d / "run.json").is_file()}
    fc = fold(read_events(by_id["SWE-agent__test-repo-i1"]))
    assert [c.name for s in fc.steps for c in s.calls] == ["find_file", "open", "edit", "bash", "submit"]
    assert fc.steps[-1].observations[0].text.lstrip().startswith("diff --git")
    info = read_run_info(by_id["SWE-agent__test-repo-i1"])
    assert info.model == "gpt-4o" and info.imported["recorded"]["tokens_sent"] == 7141
    text_based = fold(read_events(by_id["pydicom__pydicom-1458"]))
    assert "DEMONSTRATION" in text_based.opening[1].text and len(text_based.opening) == 3
    assert {c.name for s in text_based.steps for c in s.calls} == {"bash"}


def test_inspect_samples_keep_their_scores_cache_reads_and_tools(batches):
    runs = summaries(batch(batches, "inspect"))
    browser = runs["browser/1"]
    assert browser["tokens"]["prompt"] == 15235 and browser["tokens"]["cached"] == 9088
    assert browser["outcome"]["passed"] is True and browser["tool_calls_total"] == 4
    assert len([k for k in runs if k.startswith("popularity/")]) == 10


@pytest.mark.parametrize("fmt", ["mini-swe-agent", "swe-agent", "atif", "inspect"])
def test_report_and_rerender_read_each_import(batches, fmt):
    folder = batch(batches, fmt)
    md = runner.invoke(app, ["report", str(folder), "--format", "md"])
    assert md.exit_code == 0 and f"# Batch import-{fmt}" in md.output, md.output
    html = runner.invoke(app, ["report", str(folder)])
    assert html.exit_code == 0 and (folder / "report.html").is_file()
    run_dir = sorted(d for d in folder.iterdir() if (d / "run.json").is_file())[0]
    again = runner.invoke(app, ["rerender", str(run_dir), "--policy", "lean"])
    assert again.exit_code == 0 and "(recorded)" in again.output, again.output


def test_ab_pairs_two_published_batches_by_instance(batches, tmp_path):
    a, b = batch(batches, "mini-swe-agent"), batch(batches, "atif")
    result = runner.invoke(app, ["ab", str(a), str(b), "--out", str(tmp_path), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / f"ab-{a.name}-vs-{b.name}" / "ab.json").read_text())
    assert data["pairs"] == 2  # the two Gemini runs Harbor converted
