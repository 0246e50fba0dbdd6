"""Localization in reports of real runs: Gemini 3 Pro's published mini-swe-agent trajectories, imported, then
`harness report --rankings` against their gold files and a ranking of the code index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.models.pricing import load_prices
from cli.main import app
from evals.reports.load import load_run, run_dirs_in
from evals.reports.localization import Ranked, figures, of_run, read_rankings
from tests.evals.interop.test_published import published

runner = CliRunner()
# The gold patches' files of the four published runs (SWE-bench Verified), and a ranking that has the first
# two in its top 5 and misses the others.
GOLD = {
    "django__django-13670": ["django/utils/dateformat.py"],
    "django__django-16255": ["django/contrib/sitemaps/__init__.py"],
    "matplotlib__matplotlib-25287": ["lib/matplotlib/axis.py"],
    "pydata__xarray-4629": ["xarray/core/merge.py"],
}
HIT = {"django__django-13670", "django__django-16255"}


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    done = runner.invoke(app, ["import", str(published("mini-swe-agent")), "--out", str(out)])
    assert done.exit_code in (0, 1), done.output
    return next(p for p in out.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def rankings(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rankings") / "outcomes.jsonl"
    rows = [
        {"instance_id": i, "method": m, "gold_files": gold, "files": (gold if i in HIT else []) + ["setup.py"]}
        for i, gold in GOLD.items()
        for m in ("code", "bm25")
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_each_run_is_localized_at_the_first_step_that_names_a_gold_file(batch, rankings):
    ranked = read_rankings(rankings)
    assert ranked["django__django-13670"] == Ranked(
        ("django/utils/dateformat.py",), ("django/utils/dateformat.py", "setup.py")
    )
    runs = {r.summary.task_id: r for r in (load_run(d, load_prices(None)) for d in run_dirs_in(batch))}
    loc = of_run(runs["django__django-13670"], ranked)
    assert loc is not None and loc.source == "gold patch"
    assert loc.step == 1  # its first command: ls -F django/utils/dateformat.py
    assert loc.prompt_tokens == runs["django__django-13670"].steps[0].usage.prompt_tokens > 0
    assert loc.search_top is True
    every = [of_run(r, ranked) for r in runs.values()]
    assert all(x is not None and x.step is not None and x.step <= x.steps for x in every)
    assert [x.search_top for x in every if x is not None].count(True) == 2
    # Without rankings: the run's own final patch is what it had to find.
    own = of_run(runs["django__django-13670"])
    assert own is not None and own.source == "final patch" and own.targets == ("django/utils/dateformat.py",)
    assert own.search_top is None
    f = figures([x for x in every if x is not None])
    assert (
        f["all"]["runs"] == 4
        and f["all"]["localized"] == 4
        and f["all"]["ranked"] == 4
        and f["all"]["search_top5"] == 2
    )


def test_the_batch_report_shows_localization_in_markdown_and_html(batch, rankings, tmp_path):
    md = runner.invoke(app, ["report", str(batch), "--format", "md", "--rankings", str(rankings)])
    assert md.exit_code == 0, md.output
    assert "## Localization (gold patch)" in md.output
    assert "| all (4) | 4 |" in md.output and "50% of 4 |" in md.output
    html = runner.invoke(app, ["report", str(batch), "--rankings", str(rankings), "--out", str(tmp_path / "r")])
    assert html.exit_code == 0, html.output
    page = (tmp_path / "r" / "report.html").read_text()
    assert 'id="localization-runs"' in page and "django/utils/dateformat.py" in page
    run_page = next((tmp_path / "r").glob("django__django-13670*/report.html")).read_text()
    assert "ranked search at step 0" in run_page and "found it" in run_page


def test_a_rankings_file_that_is_not_one_is_a_clear_error(batch, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    result = runner.invoke(app, ["report", str(batch), "--format", "md", "--rankings", str(bad)])
    assert result.exit_code == 2 and "line 1 is not JSON" in result.output


def test_an_issue_with_only_gold_files_is_localized_against_them_and_counts_as_not_ranked(batch, tmp_path):
    path = tmp_path / "outcomes.jsonl"
    rows = [
        {"instance_id": i, "method": "code" if i in HIT else "gold", "gold_files": gold}
        | ({"files": gold} if i in HIT else {})
        for i, gold in GOLD.items()
    ]
    # A "gold" row after a ranking of the same issue does not hide the ranking.
    rows.append({"instance_id": "django__django-13670", "method": "gold", "gold_files": GOLD["django__django-13670"]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ranked = read_rankings(path)
    assert ranked["pydata__xarray-4629"] == Ranked(("xarray/core/merge.py",), None)
    assert ranked["django__django-13670"].files == ("django/utils/dateformat.py",)
    runs = [load_run(d, load_prices(None)) for d in run_dirs_in(batch)]
    every = [x for r in runs if (x := of_run(r, ranked)) is not None]
    assert {x.source for x in every} == {"gold patch"}
    assert sorted(x.task_id for x in every if x.search_top is None) == [
        "matplotlib__matplotlib-25287",
        "pydata__xarray-4629",
    ]
    f = figures(every)["all"]
    assert f["runs"] == 4 and f["ranked"] == 2 and f["search_top5"] == 2
