"""pass@k and pass^k: the estimators against hand-computed values and the exact binomial ratios, their
properties, a batch's bootstrap interval, the task-by-task comparison, and `harness swe passk` and
`harness ab --primary pass^K` on SWE batches made by the real pipeline."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from cli.main import app
from core.errors import HarnessError
from evals.ab.compare import compare
from evals.ab.passk import difference, estimate, parse_metric, pass_at_k, pass_hat_k, per_task
from evals.ab.records import RunRecord

runner = CliRunner()


def test_hand_computed_five_runs_two_successes():
    # pass@k = 1 − C(3,k)/C(5,k): 1 − 3/5, 1 − 3/10, 1 − 1/10, then 1; pass^k = C(2,k)/C(5,k): 2/5, 1/10, 0
    assert [pass_at_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.7, 0.9, 1.0, 1.0])
    assert [pass_hat_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.1, 0.0, 0.0, 0.0])
    assert pass_at_k(5, 0, 3) == 0.0 and pass_hat_k(5, 5, 5) == 1.0 and pass_at_k(1, 1, 1) == 1.0


def test_more_runs_than_k_is_required():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


@st.composite
def counts(draw):
    n = draw(st.integers(1, 60))
    return n, draw(st.integers(0, n))


@given(counts())
def test_estimators_are_rates_ordered_and_monotone_in_k(nc):
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= x <= 1.0 for x in at + hat)
    assert all(x <= y + 1e-12 for x, y in zip(at, at[1:], strict=False))  # more tries, more chances
    assert all(x >= y - 1e-12 for x, y in zip(hat, hat[1:], strict=False))  # more tries, more to get right
    assert all(h <= a + 1e-12 for a, h in zip(at, hat, strict=True))
    assert at[0] == pytest.approx(c / n) and hat[0] == pytest.approx(c / n)


@given(counts(), st.data())
def test_estimators_equal_the_exact_binomial_ratios(nc, data):
    n, c = nc
    k = data.draw(st.integers(1, n))
    assert pass_at_k(n, c, k) == pytest.approx(float(1 - Fraction(comb(n - c, k), comb(n, k))), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(float(Fraction(comb(c, k), comb(n, k))), abs=1e-12)


def test_metric_names():
    assert parse_metric("pass@3") == ("@", 3) and parse_metric("pass^12") == ("^", 12)
    assert parse_metric("pass@0") is None and parse_metric("success") is None


def runs(task: str, outcomes: str, policy: str = "a") -> list[RunRecord]:
    """One record per character: 1 a success, 0 a failure, each its own seed."""
    return [
        RunRecord(
            task_id=task,
            seed=seed,
            run_id=f"{policy}-{task}-{seed}",
            policy=policy,
            success=o == "1",
            submitted=True,
            steps=5,
            prompt_tokens=1000,
            cached_tokens=0,
            completion_tokens=100,
            cost_usd=0.01,
            wall_s=2.0,
        )
        for seed, o in enumerate(outcomes)
    ]


def test_a_batch_averages_over_tasks_and_leaves_out_those_with_too_few_runs():
    records = runs("t1", "11000") + runs("t2", "11111") + runs("t3", "1")
    values, short = per_task(records, "pass@2")
    assert values == pytest.approx({"t1": 0.7, "t2": 1.0}) and short == ["t3"]
    e = estimate(records, "pass@2", resamples=2000)
    assert e.tasks == 2 and e.value == pytest.approx(0.85) and e.left_out == ("t3",)
    assert 0.7 <= e.low <= e.value <= e.high <= 1.0
    assert estimate(records, "pass@9").tasks == 0
    with pytest.raises(HarnessError):
        per_task(records, "pass@x")


def test_the_interval_is_a_bootstrap_over_tasks():
    records = [r for i in range(30) for r in runs(f"t{i}", "1100" if i % 2 else "1111")]
    e = estimate(records, "pass^2", resamples=4000, seed=1)
    # per task 1/6 or 1: mean 7/12; the interval is over tasks, so it is wide with 30 of them
    assert e.value == pytest.approx(7 / 12) and e.low < 7 / 12 < e.high and 0.2 < e.high - e.low < 0.45


def test_differences_task_by_task():
    a = [r for i in range(12) for r in runs(f"t{i}", "1000", "a")]
    b = [r for i in range(12) for r in runs(f"t{i}", "1110", "b")]
    d = difference(a, b, "pass@2", resamples=4000)
    # A: 1 − C(3,2)/C(4,2) = 1/2; B: 1 − 0 = 1
    assert d.diff == pytest.approx(0.5) and d.low == d.high == pytest.approx(0.5) and d.p == 0.0
    same = difference(a, a, "pass@2")
    assert same.diff == 0 and same.p == 1.0


def test_one_task_has_no_interval_and_no_test():
    a, b = runs("t1", "0000", "a"), runs("t1", "1111", "b")
    e = estimate(b, "pass@2")
    assert e.tasks == 1 and e.value == 1.0 and e.as_json()["low"] is None and e.as_json()["high"] is None
    d = difference(a, b, "pass@2")
    assert d.diff == 1.0 and d.p == 1.0 and d.low != d.low and d.high != d.high  # nan: resampling one task is no test
    c = compare(a, b, primary="pass@2")
    assert not c.verdict.distinguishable and {m.test for m in c.metrics if m.name.startswith("pass")} == {
        "none (one task)"
    }


def test_ab_judges_on_pass_k_with_the_other_as_a_secondary():
    a = [r for i in range(12) for r in runs(f"t{i}", "1100" if i < 10 else "1111", "a")]
    b = [r for i in range(12) for r in runs(f"t{i}", "1111", "b")]
    c = compare(a, b, primary="pass^2", resamples=2000)
    by = {m.name: m for m in c.metrics}
    assert by["pass^2"].primary and by["pass^2"].detectable and by["pass^2"].mean_b == 1.0
    assert by["pass^2"].mean_a == pytest.approx((10 * 1 / 6 + 2) / 12)
    # pass@2 of a task solved twice in four runs: 1 − C(2,2)/C(4,2) = 5/6
    assert not by["pass@2"].primary and by["pass@2"].diff == pytest.approx(1 - (10 * 5 / 6 + 2) / 12)
    assert "pass^2" in c.verdict.differences
    with pytest.raises(HarnessError, match="at least 9 times"):
        compare(a, b, primary="pass@9")
    with pytest.raises(HarnessError, match="pass@K"):
        compare(a, b, primary="pass@")


# --- end to end: `harness swe` batches of the bundled suite, several per folder ---


def swe_batch(parent, model: str) -> None:
    result = runner.invoke(
        app,
        [
            "swe",
            "--suite",
            "builtin",
            "--only",
            "acme__textkit-7",
            "--only",
            "acme__textkit-9",
            "--model",
            model,
            "--workers",
            "2",
            "--out",
            str(parent),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def seeds(tmp_path_factory, docker_ready):
    """A: a null batch and an oracle batch of the same two instances; B: two oracle batches."""
    root = tmp_path_factory.mktemp("passk")
    swe_batch(root / "a", "null")
    swe_batch(root / "a", "oracle")
    swe_batch(root / "b", "oracle")
    [oracle] = [p for p in (root / "a").iterdir() if "oracle" in p.name]
    shutil.copytree(oracle, root / "b" / f"{oracle.name}-again")  # a second batch of B, with the same runs
    return root


def test_swe_passk_over_several_batches(seeds):
    result = runner.invoke(app, ["swe", "passk", str(seeds / "a"), "--k", "1", "--k", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by = {e["name"]: e for e in data["estimates"]}
    assert data["instances"] == 2 and data["runs"] == 4
    assert by["pass@1"]["value"] == 0.5 and by["pass@2"]["value"] == 1.0 and by["pass^2"]["value"] == 0.0
    table = runner.invoke(app, ["swe", "passk", str(seeds / "b"), "--k", "3"])
    assert table.exit_code == 0 and "leaves out 2 instances run fewer than 3 times" in table.output
    none = json.loads(runner.invoke(app, ["swe", "passk", str(seeds / "b"), "--k", "3", "--json"]).output)
    assert none["estimates"][0] == {
        "name": "pass@3",
        "k": 3,
        "tasks": 0,
        "value": None,
        "low": None,
        "high": None,
        "left_out": ["acme__textkit-7", "acme__textkit-9"],
    }


def test_harness_ab_on_swe_batches_judges_on_pass_hat_k(seeds, tmp_path):
    result = runner.invoke(
        app,
        ["ab", str(seeds / "a"), str(seeds / "b"), "--primary", "pass^2", "--out", str(tmp_path), "--resamples", "500"],
    )
    assert result.exit_code == 0, result.output
    [folder] = tmp_path.iterdir()
    data = json.loads((folder / "ab.json").read_text())
    by = {m["name"]: m for m in data["metrics"]}
    assert data["primary"] == "pass^2" and by["pass^2"]["primary"] and by["pass^2"]["n"] == 2
    assert (by["pass^2"]["mean_a"], by["pass^2"]["mean_b"], by["pass^2"]["diff"]) == (0.0, 1.0, 1.0)
    assert by["pass@2"]["diff"] == 0.0 and by["success"]["mean_a"] == 0.5
