"""A/B comparisons: exact tests, the bootstrap, pairing, the verdict on synthetic batches with
and without a known difference, and `harness ab` on batches made by the real loop."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from agent.launch import launch
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from core.policy import HarnessPolicy
from agent.task import Task
from core.types import Usage
from evals.ab.compare import compare
from evals.ab.pairing import pair_runs
from evals.ab.records import RunRecord
from evals.ab.stats import binomial_two_sided, bootstrap_means, holm, mcnemar_exact, percentile_interval, sign_test


def test_exact_binomial_p_values():
    assert binomial_two_sided(0, 10) == pytest.approx(2 / 1024)
    assert binomial_two_sided(5, 10) == 1.0
    assert binomial_two_sided(2, 10) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert binomial_two_sided(0, 0) == 1.0


def test_sign_test_drops_ties_and_mcnemar_counts_discordant_pairs():
    p, pos, neg, ties = sign_test([1, 2, 3, 0, 0, -1])
    assert (pos, neg, ties) == (3, 1, 2) and p == pytest.approx(binomial_two_sided(1, 4))
    p, only_a, only_b = mcnemar_exact([True, True, False, False, True], [True, False, True, True, True])
    assert (only_a, only_b) == (1, 2) and p == 1.0


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bootstrap_with_and_without_numpy_agree():
    rng = random.Random(3)
    diffs = [rng.gauss(2.0, 1.0) for _ in range(40)]
    with_np = percentile_interval(bootstrap_means([diffs], 4000, seed=1)[0])
    pure = percentile_interval(bootstrap_means([diffs], 4000, seed=1, use_numpy=False)[0])
    assert with_np[0] < 2.0 < with_np[1] and pure[0] < 2.0 < pure[1]
    assert with_np == pytest.approx(pure, abs=0.1)


def record(task: str, policy: str, *, seed: int | None = 0, success: bool = True, steps: int = 10, cost: float | None = 0.1,
           started: str = "") -> RunRecord:
    return RunRecord(task_id=task, seed=seed, run_id=f"{policy}-{task}-{seed}-{started}", policy=policy, success=success,
                     submitted=success, steps=steps, prompt_tokens=steps * 1000, cached_tokens=steps * 500,
                     completion_tokens=steps * 100, cost_usd=cost, wall_s=steps * 1.5, started_at=started)


def test_pairing_by_task_and_seed_in_start_order():
    a = [record("t1", "a", started="1"), record("t1", "a", started="2"), record("t2", "a"), record("t3", "a", seed=None)]
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
            out.append(RunRecord(task_id=f"task-{i}", seed=0, run_id=f"{policy}-{i}", policy=policy,
                                 success=rng.random() < p, submitted=True, steps=steps, prompt_tokens=prompt,
                                 cached_tokens=int(prompt * rng.uniform(0.5, 0.8)), completion_tokens=steps * 120,
                                 cost_usd=prompt * 3e-6 + steps * 120 * 15e-6, wall_s=steps * rng.uniform(0.8, 2.0)))
    return a, b


def test_a_known_difference_is_found_with_the_right_sign():
    a, b = synthetic_batches(random.Random(7), tasks=80, steps_shift=-5, p_a=0.3, p_b=0.85)
    c = compare(a, b, "baseline", "change", resamples=4000)
    by = {m.name: m for m in c.metrics}
    assert c.verdict.distinguishable and "change differs from baseline" in c.verdict.text
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
    return ScriptedReply(tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in calls],
                         usage=Usage(prompt_tokens=prompt, cached_tokens=prompt // 2, completion_tokens=40))


def make_batch(out: Path, tasks: int, detours: int) -> Path:
    """Each task: `detours` look-around steps, then write, check and submit."""
    for i in range(tasks):
        script = [reply(("shell", {"command": f"ls -la # look {k}"}), prompt=800 + 200 * k) for k in range(detours)]
        base = 800 + 200 * detours
        script += [reply(("write_file", {"path": "n.txt", "content": str(i)}), prompt=base),
                   reply(("shell", {"command": "cat n.txt"}), prompt=base + 200),
                   reply(("submit", {"answer": str(i)}), prompt=base + 400)]
        launch(Task(id=f"task-{i:02d}", prompt=f"Write {i} to n.txt and submit."), ScriptedModel(script, name="scripted:ab"),
               "local", HarnessPolicy(name=f"detours-{detours}"), out)
    return out


@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ab")
    return make_batch(root / "wandering", 10, detours=2), make_batch(root / "direct", 10, detours=0)


def test_harness_ab_on_real_batches(batches, tmp_path):
    a_dir, b_dir = batches
    out = tmp_path / "ab"
    result = CliRunner().invoke(app, ["ab", str(a_dir), str(b_dir), "--out", str(out), "--price-model", "openai:gpt-5",
                                      "--resamples", "2000"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ab.json").read_text())
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
    assert CliRunner().invoke(app, ["ab", str(a_dir), str(b_dir), "--out", str(out), "--resamples", "500"]).exit_code == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu",
                                    "--disable-background-networking", "--disable-component-update", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((out / "ab.html").as_uri())
        assert page.locator("#metrics tbody tr").count() >= 6
        assert page.locator("#chart-cost-success svg circle").count() == 2
        assert "Detectable difference" in page.locator(".verdict").inner_text()
        assert page.locator(".verdict li").count() >= 3
        artifacts = Path(__file__).resolve().parents[1] / "artifacts"
        artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(artifacts / "ab-report.png"), full_page=True)
        browser.close()
    assert problems == []
