"""A/B comparisons: the paired tests against scipy and textbook values, pairing, the verdict on
synthetic batches with and without a known difference, and `harness ab` on batches made by the real loop."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from typer.testing import CliRunner

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.errors import HarnessError
from core.policy import HarnessPolicy
from core.types import Usage
from evals.ab.compare import compare
from evals.ab.pairing import pair_runs
from evals.ab.records import RunRecord
from evals.stats import (
    bootstrap_means,
    holm,
    mcnemar_exact,
    mean_interval,
    newcombe_paired,
    paired_amounts,
    paired_outcomes,
    percentile_interval,
    wilson,
)
from tests.evals.reports.conftest import ARGS, CHROMIUM


def test_positive_amounts_are_tested_as_ratios_matching_scipy():
    a = [12.1, 14.3, 11.0, 15.2, 13.3]
    b = [11.0, 13.9, 9.8, 14.1, 13.0]
    res = paired_amounts(a, b)
    logs = stats.ttest_rel([math.log(x) for x in b], [math.log(x) for x in a])
    log_ci = logs.confidence_interval(0.95)
    raw_ci = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert res.test == "paired t-test on log ratios" and res.p == pytest.approx(logs.pvalue)
    assert (res.ratio_low, res.ratio_high) == pytest.approx((math.exp(log_ci.low), math.exp(log_ci.high)))
    assert res.ratio == pytest.approx(math.exp(sum(math.log(y / x) for x, y in zip(a, b)) / 5))
    assert res.diff == pytest.approx(sum(b) / 5 - sum(a) / 5) and (res.low, res.high) == pytest.approx(
        (raw_ci.low, raw_ci.high)
    )


def test_amounts_with_zeros_are_tested_as_differences_matching_scipy():
    a = [0.0, 4.0, 2.0, 7.0, 1.0]
    b = [1.0, 6.0, 2.5, 9.0, 3.0]
    res = paired_amounts(a, b)
    ref = stats.ttest_rel(b, a)
    assert res.test == "paired t-test" and res.p == pytest.approx(ref.pvalue) and math.isnan(res.ratio)
    assert (res.low, res.high) == pytest.approx(tuple(ref.confidence_interval(0.95)))


def test_paired_t_test_textbook_value():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 / (1 / sqrt 3) = 3.464 on 2 degrees of freedom, two-sided p = 0.0742
    res = paired_amounts([0, 0, 0], [1, 2, 3])
    assert res.p == pytest.approx(0.0742, abs=1e-4)
    assert (res.low, res.high) == pytest.approx((2 - 4.3027 / math.sqrt(3), 2 + 4.3027 / math.sqrt(3)), abs=1e-3)
    assert res.effect == pytest.approx(2.0)


def test_a_constant_difference_in_six_pairs_is_significant():
    a = [300_000 + 1000 * i for i in range(6)]
    res = paired_amounts(a, [x - 131_697 for x in a])
    assert res.p < 1e-9 and res.diff == res.low == res.high == -131_697
    assert res.ratio_high < 0.6


def test_a_constant_ratio_or_a_constant_difference_from_zero_is_certain():
    res = paired_amounts([100, 200, 300], [50, 100, 150])
    assert res.p == 0.0 and res.ratio == pytest.approx(0.5) and res.ratio_low == pytest.approx(res.ratio_high)
    res = paired_amounts([0, 0, 0, 0], [5, 5, 5, 5])
    assert res.p == 0.0 and res.diff == res.low == res.high == 5 and res.effect == math.inf


def test_no_difference_at_all_is_p_one():
    res = paired_amounts([5, 7, 9], [5, 7, 9])
    assert res.p == 1.0 and res.diff == 0.0


def test_one_pair_is_no_test():
    res = paired_amounts([3], [5])
    assert res.p == 1.0 and res.diff == 2 and math.isnan(res.low)


def test_heavy_tailed_differences_go_to_wilcoxon_matching_scipy():
    diffs = [1.0, 1.2, 0.9, 1.1, 1.0, 0.8, 1.3, 1.05, 1.15, 0.95, 60.0, -40.0]
    res = paired_amounts([0.0] * len(diffs), diffs)
    assert stats.shapiro(diffs).pvalue < 0.01
    assert res.test == "Wilcoxon signed-rank" and res.p == pytest.approx(stats.wilcoxon(diffs).pvalue)
    assert res.low < res.diff < res.high


def test_exact_mcnemar_and_wilson_match_scipy_and_textbook():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact(2, 8) == pytest.approx(stats.binomtest(2, 10).pvalue)
    # Wilson interval for 0 of 2: never of zero width
    low, high = wilson(0, 2)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.6576, abs=1e-4)
    assert wilson(1, 2) == pytest.approx((0.0945, 0.9055), abs=1e-4)


def test_newcombe_paired_interval_textbook_example():
    # Fagerland, Lydersen and Laake, Statistical Analysis of Contingency Tables, ch. 8 (Cavo et al. 2012):
    # estimate -0.0621, 95% CI -0.1186 to -0.0046
    assert newcombe_paired(59, 6, 16, 80) == pytest.approx((-0.1186, -0.0046), abs=1e-4)


def test_paired_outcomes_counts_discordant_pairs():
    res, only_a, only_b = paired_outcomes([True, True, False, False, True], [True, False, True, True, True])
    assert (only_a, only_b) == (1, 2) and res.p == 1.0 and res.diff == pytest.approx(0.2)
    assert res.low < 0 < res.high


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=40))
def test_outcome_intervals_hold_the_estimate_within_minus_one_to_one(pairs):
    res, _, _ = paired_outcomes([x for x, _ in pairs], [y for _, y in pairs])
    assert -1.0 <= res.low <= res.diff + 1e-12 and res.diff - 1e-12 <= res.high <= 1.0
    assert 0.0 <= res.p <= 1.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=2, max_size=30))
def test_swapping_the_batches_swaps_the_sign_and_keeps_the_p_value(pairs):
    a, b = [float(x) for x, _ in pairs], [float(y) for _, y in pairs]
    ab, ba = paired_amounts(a, b, resamples=200), paired_amounts(b, a, resamples=200)
    assert 0.0 <= ab.p <= 1.0 and ab.p == pytest.approx(ba.p, abs=1e-9)
    assert ab.diff == pytest.approx(-ba.diff)
    if ab.test.startswith("paired t-test"):  # (a bootstrap interval need not hold its mean)
        assert ab.low <= ab.diff + 1e-6 * (1 + abs(ab.diff)) and ab.diff <= ab.high + 1e-6 * (1 + abs(ab.diff))
    if math.isfinite(ab.ratio) and ab.test.startswith("paired t-test"):
        assert ab.ratio == pytest.approx(1 / ba.ratio) and ab.ratio_low <= ab.ratio * (1 + 1e-9) <= ab.ratio_high * (
            1 + 1e-9
        )


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_mean_interval_is_students_t():
    mean, low, high = mean_interval([1.0, 3.0])
    assert mean == 2.0 and (low, high) == pytest.approx((2 - 12.706 * 1.0, 2 + 12.706 * 1.0), abs=1e-2)


def test_bootstrap_interval_covers_the_mean():
    rng = random.Random(3)
    diffs = [rng.gauss(2.0, 1.0) for _ in range(40)]
    low, high = percentile_interval(bootstrap_means([diffs], 4000, seed=1)[0])
    assert low < 2.0 < high and high - low < 1.5


def record(
    task: str,
    policy: str,
    *,
    seed: int | None = 0,
    success: bool = True,
    steps: int = 10,
    cost: float | None = 0.1,
    started: str = "",
) -> RunRecord:
    return RunRecord(
        task_id=task,
        seed=seed,
        run_id=f"{policy}-{task}-{seed}-{started}",
        policy=policy,
        success=success,
        submitted=success,
        steps=steps,
        prompt_tokens=steps * 1000,
        cached_tokens=steps * 500,
        completion_tokens=steps * 100,
        cost_usd=cost,
        wall_s=steps * 1.5,
        started_at=started,
    )


def test_pairing_by_task_and_seed_in_start_order():
    a = [
        record("t1", "a", started="1"),
        record("t1", "a", started="2"),
        record("t2", "a"),
        record("t3", "a", seed=None),
    ]
    b = [record("t1", "b", started="3"), record("t2", "b", seed=1), record("t3", "b", seed=None)]
    pairs, lone_a, lone_b = pair_runs(a, b)
    assert [(p.a.task_id, p.a.started_at) for p in pairs] == [("t1", "1"), ("t3", "")]
    assert {r.run_id for r in lone_a} == {a[1].run_id, a[2].run_id}
    assert [r.task_id for r in lone_b] == ["t2"]


def synthetic_batches(rng: random.Random, tasks: int, steps_shift: float, p_a: float, p_b: float):
    """Tasks of varied difficulty; B's runs of a task differ from A's by `steps_shift` steps plus noise."""
    a, b = [], []
    for i in range(tasks):
        hard = rng.uniform(6, 30)
        for policy, shift, p, out in (("a", 0.0, p_a, a), ("b", steps_shift, p_b, b)):
            steps = max(1, round(hard + shift + rng.gauss(0, 3)))
            prompt = int(hard * steps * 300 * rng.uniform(0.8, 1.2))
            out.append(
                RunRecord(
                    task_id=f"task-{i}",
                    seed=0,
                    run_id=f"{policy}-{i}",
                    policy=policy,
                    success=rng.random() < p,
                    submitted=True,
                    steps=steps,
                    prompt_tokens=prompt,
                    cached_tokens=int(prompt * rng.uniform(0.5, 0.8)),
                    completion_tokens=steps * 120,
                    cost_usd=prompt * 3e-6 + steps * 120 * 15e-6,
                    wall_s=steps * rng.uniform(0.8, 2.0),
                )
            )
    return a, b


def test_a_known_difference_is_found_with_the_right_sign():
    a, b = synthetic_batches(random.Random(7), tasks=80, steps_shift=-5, p_a=0.3, p_b=0.85)
    c = compare(a, b, "baseline", "change", resamples=4000)
    by = {m.name: m for m in c.metrics}
    assert c.verdict.distinguishable and c.verdict.text.startswith("B differs from A on 80 paired tasks")
    assert by["success"].primary and by["success"].p_adjusted == by["success"].p
    assert by["steps"].diff < 0 and by["steps"].ci_high < 0 and by["steps"].detectable
    assert by["steps"].direction == "better"
    assert by["success"].diff > 0 and by["success"].ci_low > 0 and by["success"].detectable
    assert by["cost_usd"].diff < 0 and by["cost_usd"].ci_high < 0


def test_batches_from_one_distribution_are_not_told_apart_in_at_least_90_percent_of_repetitions():
    repetitions, same = 100, 0
    for rep in range(repetitions):
        a, b = synthetic_batches(random.Random(1000 + rep), tasks=30, steps_shift=0, p_a=0.5, p_b=0.5)
        c = compare(a, b, resamples=1000, seed=rep)
        same += not c.verdict.distinguishable and "No detectable difference" in c.verdict.text
    assert same >= 0.9 * repetitions, f"{same} of {repetitions}"


def issue_batches(pairs: int = 6):
    """Chess-like batches: the same outcomes, B reads 131,697 fewer prompt tokens in every game."""
    a, b = [], []
    for i in range(pairs):
        a.append(
            RunRecord(
                task_id="chess",
                seed=i,
                run_id=f"a{i}",
                policy="default",
                success=i % 2 == 0,
                submitted=i % 2 == 0,
                steps=20 + i,
                prompt_tokens=300_000 + 1000 * i,
                cached_tokens=0,
                completion_tokens=9000 + 10 * i,
                cost_usd=None,
                wall_s=30.0 + i,
            )
        )
        b.append(
            RunRecord(
                task_id="chess",
                seed=i,
                run_id=f"b{i}",
                policy="lean",
                success=i % 2 == 0,
                submitted=i % 2 == 0,
                steps=20 + i,
                prompt_tokens=300_000 + 1000 * i - 131_697,
                cached_tokens=0,
                completion_tokens=9000 + 10 * i + (3 if i % 3 else -4),
                cost_usd=None,
                wall_s=30.0 + i + (0.5 if i % 2 else -0.4),
            )
        )
    return a, b


def test_a_constant_token_saving_over_six_pairs_is_named_in_the_verdict():
    a, b = issue_batches(6)
    c = compare(a, b, "default-batch", "lean-batch", resamples=500)
    by = {m.name: m for m in c.metrics}
    tokens = by["prompt_tokens"]
    assert tokens.detectable and tokens.diff == -131_697 and tokens.p_adjusted < 0.001 and tokens.direction == "better"
    assert not by["success"].detectable and not by["steps"].detectable and not by["wall_s"].detectable
    assert c.verdict.distinguishable and c.verdict.differences == ["prompt_tokens"]
    assert "prompt tokens -131,697 per task (B/A ×0.565, 95% CI ×0.56" in c.verdict.text
    assert c.verdict.text.count("B differs from A") == 1


def test_the_primary_metric_is_judged_without_correction():
    a, b = issue_batches(6)
    c = compare(a, b, primary="prompt_tokens", resamples=500)
    by = {m.name: m for m in c.metrics}
    assert by["prompt_tokens"].primary and by["prompt_tokens"].p_adjusted == by["prompt_tokens"].p
    assert not by["success"].primary and by["success"].p_adjusted >= by["success"].p
    with pytest.raises(HarnessError, match="unknown primary metric 'tokens'"):
        compare(a, b, primary="tokens")
    with pytest.raises(HarnessError, match="--primary"):
        compare(a, b, primary="cost_usd")


def test_identical_batches_are_not_told_apart():
    a, _ = issue_batches(6)
    c = compare(a, [RunRecord(**{**r.__dict__, "run_id": "b" + r.run_id}) for r in a], resamples=500)
    assert not c.verdict.distinguishable and c.verdict.text.startswith("No detectable difference between B and A on 6")
    assert all(m.p == 1.0 for m in c.metrics)


def test_two_games_give_a_proper_interval_not_zero_width():
    a, b = issue_batches(2)
    c = compare(a, b, resamples=500)
    low, high = c.success_a[1:]
    assert 0.0 <= low < c.success_a[0] < high <= 1.0 and high - low > 0.5


def test_unpriced_runs_leave_cost_out_and_say_so():
    a = [record(f"t{i}", "a", cost=None) for i in range(5)]
    b = [record(f"t{i}", "b", cost=None) for i in range(5)]
    c = compare(a, b, resamples=200)
    assert "cost_usd" not in {m.name for m in c.metrics}
    assert any("cost" in n and "price table" in n for n in c.notes)
    assert c.spend_label == "prompt tokens"


def test_no_common_task_means_no_comparison():
    c = compare([record("x", "a")], [record("y", "b")], resamples=200)
    assert c.pairs == 0 and not c.verdict.distinguishable and "nothing can be compared" in c.verdict.text


# --- end to end: batches made by the real loop, compared by `harness ab` ---


def reply(*calls: tuple[str, dict], prompt: int) -> ScriptedReply:
    return ScriptedReply(
        tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in calls],
        usage=Usage(prompt_tokens=prompt, cached_tokens=prompt // 2, completion_tokens=40),
    )


def make_batch(out: Path, tasks: int, detours: int) -> Path:
    """Each task: `detours` look-around steps, then write, check and submit."""
    for i in range(tasks):
        script = [reply(("shell", {"command": f"ls -la # look {k}"}), prompt=800 + 200 * k) for k in range(detours)]
        base = 800 + 200 * detours
        script += [
            reply(("write_file", {"path": "n.txt", "content": str(i)}), prompt=base),
            reply(("shell", {"command": "cat n.txt"}), prompt=base + 200),
            reply(("submit", {"answer": str(i)}), prompt=base + 400),
        ]
        start(
            RunSpec(
                Task(id=f"task-{i:02d}", prompt=f"Write {i} to n.txt and submit."),
                ScriptedModel(script, name="scripted:ab"),
                HarnessPolicy(name=f"detours-{detours}"),
                out,
            )
        )
    return out


@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ab")
    return make_batch(root / "wandering", 10, detours=2), make_batch(root / "direct", 10, detours=0)


def test_harness_ab_on_real_batches(batches, tmp_path):
    a_dir, b_dir = batches
    out = tmp_path / "ab"
    result = CliRunner().invoke(
        app, ["ab", str(a_dir), str(b_dir), "--out", str(out), "--price-model", "openai:gpt-5", "--resamples", "2000"]
    )
    assert result.exit_code == 0, result.output
    assert f"ab-{a_dir.name}-vs-{b_dir.name}" in result.output  # --out is the parent of the A/B folder
    data = json.loads((out / f"ab-{a_dir.name}-vs-{b_dir.name}" / "ab.json").read_text())
    assert data["pairs"] == 10 and data["a_policies"] == ["detours-2"] and data["b_policies"] == ["detours-0"]
    by = {m["name"]: m for m in data["metrics"]}
    assert by["steps"]["diff"] == -2 and by["steps"]["ci_high"] < 0 and by["steps"]["detectable"]
    assert by["cost_usd"]["diff"] < 0 and by["cost_usd"]["direction"] == "better"
    assert by["success"]["diff"] == 0 and not by["success"]["detectable"]
    assert data["verdict"]["distinguishable"] and "steps" in data["verdict"]["differences"]
    assert all(v is None or math.isfinite(v) for m in data["metrics"] for v in (m["ci_low"], m["ci_high"]))


def test_ab_html_renders_in_chromium_without_errors(batches, tmp_path):
    from playwright.sync_api import sync_playwright

    a_dir, b_dir = batches
    out = tmp_path / "ab"
    assert (
        CliRunner().invoke(app, ["ab", str(a_dir), str(b_dir), "--out", str(out), "--resamples", "500"]).exit_code == 0
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((out / f"ab-{a_dir.name}-vs-{b_dir.name}" / "ab.html").as_uri())
        assert page.locator("#metrics tbody tr").count() >= 6
        assert page.locator("#chart-cost-success svg circle").count() == 2
        assert page.locator(".verdict").inner_text().count("B differs from A") == 1
        assert page.locator(".verdict li").count() >= 3
        artifacts = Path(__file__).resolve().parents[1] / "artifacts"
        artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(artifacts / "ab-report.png"), full_page=True)
        browser.close()
    assert problems == []
