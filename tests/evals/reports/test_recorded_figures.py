"""Reports and `harness ab` on imported runs show the source's own numbers (its recorded cost, per reply and in
total, its provider's cached share and prompt tokens) as the source's, beside the harness's repriced cost and
ideal prefix reuse. The trajectories are built as mini-swe-agent writes them (tests/evals/interop/documents.py),
so this needs no published fixture; every expected figure is computed from the document imported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent.models.pricing import cost_usd, format_usd, load_prices
from cli.main import app
from core.types import Usage
from evals.reports.recorded import Recorded, cost_total
from tests.evals.interop import documents as docs

runner = CliRunner()
IDS = ("repo__repo-1", "repo__repo-2", "repo__repo-3")
MODEL = "example-lab/model-x"  # a model the shipped price table does not know
PRICE = '[example-lab."model-x"]\ninput = 2.0\noutput = 12.0\ncached_input = 0.1\ncache_write = 1.0\n'


def invoke(*args: Any):
    return runner.invoke(app, [str(a) for a in args])


def mini(instance: str, own_total: float | None = 0.0175, scale: float = 1.0, drop_cost: int | None = None) -> dict:
    """mini-swe-agent v1; its own total differs from the replies' costs summed, as it does when the source
    counted a call the messages do not keep."""
    doc = docs.mini_v1(instance)
    doc["info"]["config"]["model"]["model_name"] = MODEL
    for m in doc["messages"]:
        if m["role"] == "assistant":
            m["extra"]["response"]["model"] = MODEL
    for n, usage in enumerate(usages(doc)):
        usage["cost"] = round(usage["cost"] * scale, 6)
        if n == drop_cost:
            del usage["cost"]
    stats = doc["info"]["model_stats"]
    if own_total is None:
        del stats["instance_cost"]
    else:
        stats["instance_cost"] = own_total * scale
    return doc


def usages(doc: dict) -> list[dict]:
    return [m["extra"]["response"]["usage"] for m in doc["messages"] if m["role"] == "assistant"]


def replies_cost(doc: dict) -> float:
    return sum(u["cost"] for u in usages(doc) if "cost" in u)


def imported(tmp_path: Path, name: str, built: dict[str, dict]) -> Path:
    for instance, doc in built.items():
        docs.write(tmp_path / name / f"{instance}.traj.json", doc)
    result = invoke("import", tmp_path / name, "--out", tmp_path / "runs")
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / f"import-{name}"


def run_in(batch: Path, instance: str) -> Path:
    return next(d for d in batch.iterdir() if d.name.startswith(instance))


def test_an_imported_runs_report_names_its_recorded_figures_as_the_sources(tmp_path):
    doc = mini("repo__repo-1")
    run = run_in(imported(tmp_path, "mini", {"repo__repo-1": doc}), "repo__repo-1")
    prompt = sum(u["prompt_tokens"] for u in usages(doc))
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages(doc))
    md = invoke("report", run, "--format", "md")
    assert md.exit_code == 0, md.output
    assert (
        f"**recorded by mini-swe-agent** prompt tokens {prompt:,} · provider's cached share {cached / prompt:.0%}"
        in md.output
    )
    assert (
        f"**cost** unknown (no price for example-lab:model-x in the table) · **recorded by mini-swe-agent** "
        f"{format_usd(replies_cost(doc))} (5 replies' costs summed; its own total {format_usd(0.0175)})" in md.output
    )
    assert "ideal prefix reuse" in md.output and "at run time" not in md.output  # the recorded cost is not ours
    html = invoke("report", run)
    assert html.exit_code == 0
    page = (run / "report.html").read_text()
    assert "cost recorded by mini-swe-agent" in page and "ideal prefix reuse" in page
    assert "Figures recorded by mini-swe-agent are the source&#39;s own" in page


def test_a_priced_model_shows_the_repriced_cost_beside_the_recorded_one(tmp_path):
    doc = mini("repo__repo-1")
    run = run_in(imported(tmp_path, "mini", {"repo__repo-1": doc}), "repo__repo-1")
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICE)
    price = load_prices(prices)[("example-lab", "model-x")]
    ours = sum(
        cost_usd(
            price,
            Usage(
                prompt_tokens=u["prompt_tokens"],
                cached_tokens=u["prompt_tokens_details"]["cached_tokens"],
                completion_tokens=u["completion_tokens"],
            ),
        )
        for u in usages(doc)
    )
    md = invoke("report", run, "--format", "md", "--prices", prices)
    assert md.exit_code == 0, md.output
    assert (
        f"**cost** {format_usd(ours)} (priced from the table as model-x) · **recorded by mini-swe-agent** "
        f"{format_usd(replies_cost(doc))}" in md.output
    )


def test_a_reply_without_a_cost_makes_the_sources_own_total_the_recorded_cost(tmp_path):
    partial, bare = mini("repo__repo-1", drop_cost=2), mini("repo__repo-2", own_total=None, drop_cost=2)
    batch = imported(tmp_path, "mini", {"repo__repo-1": partial, "repo__repo-2": bare})
    first = invoke("report", run_in(batch, "repo__repo-1"), "--format", "md").output
    assert (
        f"**recorded by mini-swe-agent** {format_usd(0.0175)} (its own total; 4 of 5 replies have a cost "
        f"({format_usd(replies_cost(partial))}))" in first
    )
    second = invoke("report", run_in(batch, "repo__repo-2"), "--format", "md").output
    assert f"**recorded by mini-swe-agent** at least {format_usd(replies_cost(bare))} (4 of 5 replies" in second
    md = invoke("report", batch, "--format", "md").output
    assert "**cost** unknown (1 runs have no price and no recorded cost)" in md  # never a partial sum as the total
    assert "cost unknown (1 of 2 runs have a recorded cost)" in md


def test_the_batch_report_counts_recorded_costs_where_no_price_is_known_and_says_so(tmp_path):
    built = {instance: mini(instance, scale=i + 1) for i, instance in enumerate(IDS)}
    batch = imported(tmp_path, "mini", built)
    total = sum(replies_cost(d) for d in built.values())
    md = invoke("report", batch, "--format", "md")
    assert md.exit_code == 0, md.output
    assert f"**cost** {format_usd(total)} (total as recorded by mini-swe-agent)" in md.output
    assert "| ideal reuse | cost | recorded cost | findings |" in md.output
    for instance, doc in built.items():
        row = next(line for line in md.output.splitlines() if line.startswith(f"| {instance}-"))
        assert row.split(" | ")[7:9] == ["unknown", format_usd(replies_cost(doc))], row  # ours, then the source's
    assert invoke("report", batch).exit_code == 0
    page = (batch / "report.html").read_text()
    cards = dict(re.findall(r'<div class="k">(.*?)</div><div class="v">(.*?)</div>', page))
    assert cards["cost"] == cards["recorded cost"] == format_usd(total)
    assert cards["ideal prefix reuse"].endswith("%")
    assert '<th class="num">recorded cost</th>' in page


def test_a_batch_total_uses_the_table_first_and_names_every_cost_it_counts():
    rec = Recorded("mini-swe-agent", 5, 5, 0.5, 0.6, 1000, 500)
    assert cost_total([(1.0, rec), (None, rec)]).usd == 1.5
    assert cost_total([(1.0, rec), (None, rec)]).label == (
        "total: 1 runs priced from the table, 1 as recorded by mini-swe-agent"
    )
    assert cost_total([(1.0, None), (None, None)]).usd is None  # a run of ours with no price: unknown, never zero
    assert cost_total([(1.0, None), (None, None)]).label == "1 runs have no price"
    assert (
        cost_total([(None, Recorded("x", 2, 0, None, None, 0, 0))]).label == "1 runs have no price and no recorded cost"
    )
    assert cost_total([(1.0, None)]).label == "total, priced from the table"


def test_ab_on_two_imported_batches_pairs_by_instance_and_judges_the_recorded_cost(tmp_path):
    a = imported(tmp_path, "a", {i: mini(i) for i in IDS})
    b = imported(tmp_path, "b", {i: mini(i, scale=2.0) for i in reversed(IDS)})
    result = invoke("ab", a, b, "--out", tmp_path, "--resamples", 200)
    assert result.exit_code == 0, result.output
    assert "cost as recorded (USD)" in result.output and "note: cost as recorded (USD) judges cost" in result.output
    data = json.loads((tmp_path / "ab-import-a-vs-import-b" / "ab.json").read_text())
    by = {m["name"]: m for m in data["metrics"]}
    assert data["pairs"] == 3 and "cost_usd" not in by
    expected = replies_cost(mini("repo__repo-1"))
    assert by["recorded_cost_usd"]["mean_a"] == expected
    assert by["recorded_cost_usd"]["mean_b"] == replies_cost(mini("repo__repo-1", scale=2.0))
    assert data["spend_label"] == "cost as recorded (USD)"
    assert ">recorded cost A</th>" in (tmp_path / "ab-import-a-vs-import-b" / "ab.html").read_text()
    assert any("the cost each run's source recorded (mini-swe-agent)" in n for n in data["notes"])
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICE)
    priced = invoke("ab", a, b, "--out", tmp_path / "priced", "--resamples", 200, "--prices", prices)
    assert priced.exit_code == 0, priced.output
    data = json.loads((tmp_path / "priced" / "ab-import-a-vs-import-b" / "ab.json").read_text())
    assert {"cost_usd"} <= {m["name"] for m in data["metrics"]} and "recorded_cost_usd" not in {
        m["name"] for m in data["metrics"]
    }  # the table prices every run: one cost row, ours


def test_a_source_that_kept_only_totals_is_never_repriced_as_zero(tmp_path):
    """SWE-agent records the run's totals, not each reply's usage: gpt-4o has a price, but there is nothing to
    apply it to, so the cost is unknown, and the recorded figures are its totals."""
    doc = docs.swe_agent("repo__repo-1")
    stats = doc["info"]["model_stats"]
    docs.write(tmp_path / "swe" / "repo__repo-1.traj", doc)
    assert invoke("import", tmp_path / "swe" / "repo__repo-1.traj", "--out", tmp_path / "runs").exit_code == 0
    [run] = [d for d in (tmp_path / "runs").iterdir() if (d / "run.json").is_file()]
    md = invoke("report", run, "--format", "md").output
    assert f"prompt tokens not recorded per reply (its own total {stats['tokens_sent']:,})" in md, md
    assert (
        f"**cost** unknown (some replies have no recorded usage to price) · **recorded by swe-agent** "
        f"{format_usd(stats['instance_cost'])} (its own total; no reply has a cost)" in md
    )
    assert "$0.0000" not in md
    assert invoke("report", run).exit_code == 0
    assert "the source recorded no usage for 3 of the run" in (run / "report.html").read_text()
