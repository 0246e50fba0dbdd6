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
from agent.models.pricing import format_usd
from cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]
# The files live in the checkout, or, laid by whoever may keep third-party data, in the shared/ beside it.
PLACES = (ROOT / "tests" / "fixtures" / "imports", ROOT.parent / "shared" / "fixtures" / "imports")


def published(fmt: str) -> Path:
    for place in PLACES:
        folder = place / fmt
        if folder.is_dir() and any(p.suffix in (".json", ".jsonl", ".traj", ".eval") for p in folder.iterdir()):
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
    paired = ("django__django-16255", "django__django-13670")
    expected = sum(recorded_costs(published("mini-swe-agent") / f"{i}.traj.json")[0] for i in paired) / 2

    def metrics(*args: str) -> dict[str, dict]:
        out = tmp_path / str(len(args))
        result = runner.invoke(app, ["ab", str(a), str(b), "--out", str(out), "--resamples", "200", *args])
        assert result.exit_code == 0, result.output
        data = json.loads((out / f"ab-{a.name}-vs-{b.name}" / "ab.json").read_text())
        assert data["pairs"] == 2  # the two Gemini runs Harbor converted
        return {m["name"]: m for m in data["metrics"]}

    # The table's Gemini 3 Pro price reproduces what OpenRouter billed each reply: repriced, the same cost.
    by = metrics()
    assert by["cost_usd"]["mean_a"] == pytest.approx(expected, rel=1e-4)
    assert by["cost_usd"]["mean_b"] == pytest.approx(expected, rel=1e-4)
    # A table without the model: cost is judged on what the sources recorded, the same run either way.
    table = tmp_path / "prices.toml"
    table.write_text('[openai."gpt-4o"]\ninput = 2.5\noutput = 10.0\n')
    by = metrics("--prices", str(table))
    assert "cost_usd" not in by and by["recorded_cost_usd"]["label"] == "cost as recorded (USD)"
    assert by["recorded_cost_usd"]["mean_a"] == pytest.approx(expected, abs=1e-5)
    assert by["recorded_cost_usd"]["mean_b"] == pytest.approx(expected, abs=1e-5)


def recorded_costs(path: Path) -> tuple[float, float, int, int, int]:
    """From a mini-swe-agent file itself: its replies' costs summed (OpenRouter's, in each raw response), its own
    total (info.model_stats.instance_cost), its replies, and the prompt and cached tokens its provider reported."""
    doc = json.loads(path.read_text())
    usages = [m["extra"]["response"]["usage"] for m in doc["messages"] if m["role"] == "assistant"]
    return (
        sum(u["cost"] for u in usages),
        doc["info"]["model_stats"]["instance_cost"],
        len(usages),
        sum(u["prompt_tokens"] for u in usages),
        sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages),
    )


def test_reports_show_the_costs_and_cache_mini_swe_agent_recorded_as_its(batches, tmp_path):
    folder, files = batch(batches, "mini-swe-agent"), published("mini-swe-agent")
    without = tmp_path / "prices.toml"  # a table that does not know Gemini 3 Pro
    without.write_text('[openai."gpt-4o"]\ninput = 2.5\noutput = 10.0\n')
    grand = 0.0
    for path in sorted(files.glob("*.traj.json")):
        cost, own, replies, prompt, cached = recorded_costs(path)
        grand += cost
        run_dir = next(d for d in folder.iterdir() if d.name.startswith(path.name.removesuffix(".traj.json") + "-"))
        md = runner.invoke(app, ["report", str(run_dir), "--format", "md"]).output
        assert (
            f"**recorded by mini-swe-agent** {format_usd(cost)} ({replies} replies' costs summed; its own total "
            f"{format_usd(own)})" in md
        ), md
        assert f"prompt tokens {prompt:,} · provider's cached share {cached / prompt:.0%} ({cached:,} tokens)" in md
        # ours, from the table's price, which reproduces what OpenRouter billed
        assert f"**cost** {format_usd(cost)} (priced from the table as gemini-3-pro-preview)" in md, md
        md = runner.invoke(app, ["report", str(run_dir), "--format", "md", "--prices", str(without)]).output
        assert "**cost** unknown (no price for google:gemini-3-pro-preview in the table)" in md, md
    md = runner.invoke(app, ["report", str(folder), "--format", "md", "--prices", str(without)]).output
    assert f"**cost** {format_usd(grand)} (total as recorded by mini-swe-agent)" in md, md
    assert runner.invoke(app, ["report", str(folder)]).exit_code == 0
    page = (folder / "report.html").read_text()
    assert f'<div class="k">recorded cost</div><div class="v">{format_usd(grand)}</div>' in page


def test_harbors_conversion_is_named_as_read_from_atif_with_the_costs_it_holds(batches):
    folder, files = batch(batches, "atif"), published("atif")
    for instance in ("django__django-16255", "django__django-13670"):
        doc = json.loads((files / f"{instance}.json").read_text())
        steps = [s["metrics"]["cost_usd"] for s in doc["steps"] if "cost_usd" in (s.get("metrics") or {})]
        run_dir = next(d for d in folder.iterdir() if d.name.startswith(f"{instance}-"))
        md = runner.invoke(app, ["report", str(run_dir), "--format", "md"]).output
        assert (
            f"**recorded by mini-swe-agent (read from ATIF)** {format_usd(sum(steps))} ({len(steps)} replies' costs "
            f"summed; its own total {format_usd(doc['final_metrics']['total_cost_usd'])})" in md
        ), md


def test_a_grades_file_makes_ab_judge_published_runs_on_resolved(tmp_path):
    """The four runs' verdicts as the Gemini folder's results_summary.json gives them (all resolved); Harbor's
    ATIF keeps no exit status, so without grades its runs were never a success."""
    grades = tmp_path / "results_summary.json"
    ids = [p.name.removesuffix(".traj.json") for p in published("mini-swe-agent").glob("*.traj.json")]
    grades.write_text(json.dumps({"instances": [{"instance_id": i, "resolved": True} for i in ids]}))
    out = tmp_path / "runs"
    for fmt in ("mini-swe-agent", "atif"):
        result = runner.invoke(app, ["import", str(published(fmt)), "--out", str(out), "--grades", str(grades)])
        assert result.exit_code == 0, result.output
    a, b = out / "import-mini-swe-agent", out / "import-atif"
    result = runner.invoke(app, ["ab", str(a), str(b), "--out", str(tmp_path), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    by = {m["name"]: m for m in json.loads((tmp_path / f"ab-{a.name}-vs-{b.name}" / "ab.json").read_text())["metrics"]}
    assert by["success"]["mean_a"] == by["success"]["mean_b"] == 1.0
    assert by["submitted"]["mean_b"] == 0.0  # submission is no longer what success means
