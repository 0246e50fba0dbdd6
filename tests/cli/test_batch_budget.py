"""`harness chess` and `harness swe` with `--max-cost-usd`: the runs the budget did not start are said on
one line with the way to go on, batch.json holds the batch's cost, and a budget without a price is refused
before anything is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.evals.executors.priced import dollar_a_game

SUBSET = ["acme__configlite-44", "acme__inventory-17", "acme__textkit-9"]


def harness(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line(output: str) -> str:
    return " ".join(output.split())


def test_harness_chess_says_how_much_it_spent_and_how_to_play_the_rest(tmp_path):
    model, prices = dollar_a_game(tmp_path)
    common = ["--model", model, "--prices", str(prices), "--opponent", "random", "--color", "white"]
    result = harness("chess", "--games", "5", *common, "--max-cost-usd", "1.5", "--out", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "runs").iterdir()
    assert (
        f"cost: $2.00 of a $1.50 budget; the budget was reached and 3 games were not started. To run them, "
        f"run again with --resume {folder} and a larger --max-cost-usd." in one_line(result.output)
    )
    assert "skipped 3 (budget)" in one_line(result.output)

    result = harness("chess", "--games", "5", *common, "--max-cost-usd", "10", "--resume", str(folder), "--json")
    assert result.exit_code == 0, result.output
    cost = json.loads((folder / "batch.json").read_text())["cost"]
    assert cost == {"cost_usd": 5.0, "unpriced_calls": 0, "max_cost_usd": 10.0, "skipped_for_budget": 0}


def test_a_budget_without_a_price_is_refused_before_any_folder(tmp_path):
    model, _ = dollar_a_game(tmp_path)
    for args in (
        ["chess", "--model", model, "--opponent", "random"],
        ["swe", "--model", "null", "--only", SUBSET[0]],
    ):
        result = harness(*args, "--max-cost-usd", "2", "--out", str(tmp_path / "runs"))
        assert result.exit_code == 2, result.output
        said = one_line(result.output)
        assert "--max-cost-usd = 2 is set" in said and "has no price for model" in said, said
        assert "or drop --max-cost-usd" in said
        assert not (tmp_path / "runs").exists()


def test_harness_swe_skips_instances_past_the_budget_and_resume_runs_them(docker_ready, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('[reference."null"]\ninput = 1.0\noutput = 1.0\n')  # the null agent, a reference agent
    only = [arg for iid in SUBSET for arg in ("--only", iid)]
    common = ["swe", "--model", "null", *only, "--prices", str(prices)]
    # Any cost reaches a budget this small: the first instance runs, the other two do not start.
    result = harness(*common, "--max-cost-usd", "0.000001", "--out", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "runs").iterdir()
    said = one_line(result.output)
    assert "2 instances were not started" in said and f"--resume {folder} and a larger --max-cost-usd" in said
    first = json.loads((folder / "batch.json").read_text())["cost"]
    assert first["skipped_for_budget"] == 2 and first["cost_usd"] > 0 and first["unpriced_calls"] == 0
    summary = json.loads((folder / SUBSET[0] / "summary.json").read_text())
    assert first["cost_usd"] == summary["cost_usd"]
    assert json.loads((folder / "report.json").read_text())["incomplete_ids"] == SUBSET[1:]
    assert not any((folder / iid).exists() for iid in SUBSET[1:])

    result = harness(*common, "--max-cost-usd", "1", "--resume", str(folder), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["incomplete_ids"] == [] and shown["cost"]["skipped_for_budget"] == 0
    costs = [json.loads((folder / iid / "summary.json").read_text())["cost_usd"] for iid in SUBSET]
    assert shown["cost"]["cost_usd"] == pytest.approx(sum(costs))
    items = json.loads((folder / "executor.json").read_text())["items"]
    assert [items[iid]["status"] for iid in SUBSET] == ["reused", "done", "done"]


def test_harness_chess_json_carries_the_cost(tmp_path: Path):
    model, prices = dollar_a_game(tmp_path)
    result = harness(
        "chess", "--model", model, "--prices", str(prices), "--opponent", "random", "--json", "--out", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cost"]["cost_usd"] == 1.0
