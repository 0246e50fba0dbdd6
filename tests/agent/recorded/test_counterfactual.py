"""Counterfactual cost and fit of a recorded run: the pricing arithmetic by hand, the fit by hand, then both on
imported runs (one built from a mini-swe-agent document, one real published Gemini run when it is laid)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.journal.store import read_events
from agent.models.pricing import Price, load_prices
from agent.recorded.counterfactual import counterfactual, figures, fit
from agent.recorded.rerender import Rerendered, StepCost
from cli.main import app
from core.context_policy import Compact
from core.errors import HarnessError
from core.policy import HarnessPolicy
from core.presets import PRESETS
from core.types import Usage
from tests.evals.interop import documents
from tests.evals.interop.test_published import published

PRICE = Price("test", "model", input=3.0, output=15.0, cached_input=0.1)


def step(n: int, prompt: int, reused: int, completion: int = 0, recorded: int = 0) -> StepCost:
    return StepCost(n, prompt, reused, 2 * n, Usage(prompt_tokens=recorded, completion_tokens=completion))


def test_each_step_is_priced_as_uncached_input_cached_input_and_the_recorded_output():
    r = Rerendered(
        steps=[step(1, 1000, 0, completion=100), step(2, 1500, 1000, completion=50)],
        summariser=Usage(prompt_tokens=200, completion_tokens=20),
    )
    f = figures("p", r, PRICE)
    # step 1: 1000 × $3/M + 100 × $15/M; step 2: 500 × $3/M + 1000 × $0.30/M + 50 × $15/M
    assert [s.cost_usd for s in f.steps] == pytest.approx([0.0045, 0.00255])
    assert f.summariser_cost_usd == pytest.approx(200 * 3e-6 + 20 * 15e-6)
    assert f.cost_usd == pytest.approx(0.0045 + 0.00255 + 0.0009)
    assert (f.prompt_tokens, f.reused_tokens, f.peak_context, f.ideal_cached_share) == (2500, 1000, 1500, 0.4)
    # Scaled to the source's tokens: our counts × 1.1, the recorded completions as they were.
    scaled = figures("p", r, PRICE, scale=1.1)
    assert [(s.prompt_tokens, s.reused) for s in scaled.steps] == [(1100, 0), (1650, 1100)]
    assert scaled.steps[0].cost_usd == pytest.approx(1100 * 3e-6 + 100 * 15e-6)
    assert figures("p", r, None).cost_usd is None  # no price: unknown, never zero


def test_the_fit_is_the_ratio_of_totals_and_how_closely_each_step_follows_it():
    exact = fit([step(1, 100, 0, recorded=110), step(2, 200, 0, recorded=220), step(3, 300, 0, recorded=330)])
    assert exact is not None and (exact.steps, exact.scale, exact.r2, exact.mean_abs_rel_error) == (3, 1.1, 1.0, 0.0)
    # recorded 100, 300 against ours 100, 100 (the step without a recorded count left out): scale 2, so
    # predictions 200, 200: errors 1.0 and 1/3, R² = 1 − (100² + 100²) / (100² + 100²) = 0.
    rough = fit([step(1, 100, 0, recorded=100), step(2, 100, 0, recorded=300), step(3, 50, 0)])
    assert rough is not None and (rough.steps, rough.scale, rough.r2) == (2, 2.0, 0.0)
    assert rough.mean_abs_rel_error == pytest.approx((1 + 1 / 3) / 2, abs=1e-4)
    assert fit([step(1, 100, 0)]) is None  # no usage recorded: nothing to fit


def imported(tmp_path: Path, doc: dict, name: str = "run.traj.json") -> Path:
    source = documents.write(tmp_path / "src" / name, doc)
    result = CliRunner().invoke(app, ["import", str(source), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    return next(d for d in (tmp_path / "runs").iterdir() if (d / "run.json").is_file())


def test_a_document_built_run_fits_its_recorded_prompt_tokens_and_is_priced_as_gemini(tmp_path):
    run_dir = imported(tmp_path, documents.mini_v1())
    c = counterfactual(run_dir, [PRESETS["lean"]], load_prices())
    replies = [e for e in read_events(run_dir) if e.type == "model_replied"]
    ours = [e.counted_tokens for e in replies]  # what the import counted: the recorded policy rebuilds the same
    assert [s.prompt_tokens for s in c.policies[0].steps] == ours
    recorded = [1000, 1100, 1200, 1300, 1400]  # the document's usage.prompt_tokens
    assert c.fit is not None and c.fit.steps == 5 and c.fit.scale == round(sum(recorded) / sum(ours), 4)
    assert c.price is not None and (c.price.provider, c.price.model) == ("google", "gemini-3-pro-preview")
    assert c.recorded.cost_usd == pytest.approx(0.015) and c.recorded.prompt_tokens == sum(recorded)
    own = c.policies[0]
    by_hand = sum(((s.prompt_tokens - s.reused) * 2.0 + s.reused * 0.2 + 40 * 12.0) / 1e6 for s in own.steps)
    assert own.cost_usd == pytest.approx(by_hand)  # each reply recorded 40 completion tokens
    assert [f.policy for f in c.policies] == ["mini-swe-agent (recorded)", "lean"]

    scaled = counterfactual(run_dir, [], load_prices(), scale_to_recorded=True)
    assert scaled.scale == c.fit.scale
    assert abs(scaled.policies[0].prompt_tokens - sum(recorded)) <= len(recorded)  # rounding, one token a step


def test_a_price_model_the_table_lacks_is_refused(tmp_path):
    run_dir = imported(tmp_path, documents.mini_v1())
    with pytest.raises(HarnessError, match="no 'nobody:nothing'"):
        counterfactual(run_dir, [], load_prices(), price_model="nobody:nothing")
    as_sonnet = counterfactual(run_dir, [], load_prices(), price_model="anthropic:claude-sonnet-4-5")
    assert as_sonnet.price is not None and as_sonnet.price.input == 3.0


def test_a_published_gemini_run_tracks_the_prompt_tokens_its_provider_recorded(tmp_path):
    folder = published("mini-swe-agent")
    doc = (folder / "django__django-16255.traj.json").read_text()
    source = tmp_path / "src" / "django__django-16255.traj.json"
    source.parent.mkdir()
    source.write_text(doc)
    result = CliRunner().invoke(app, ["import", str(source), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "runs").iterdir())
    c = counterfactual(run_dir, [PRESETS["compact_cache_aware"]], load_prices())
    # Gemini's tokenizer counts about 7% more than cl100k on this run, step by step within a few per cent.
    assert c.fit is not None and c.fit.steps == 17
    assert 1.0 < c.fit.scale < 1.2 and c.fit.r2 is not None and c.fit.r2 > 0.98 and c.fit.mean_abs_rel_error < 0.05
    # The sanity check: the recorded policy under an ideal cache costs no more than the provider billed
    # (summary.json keeps 6 places).
    recorded_cost = c.recorded.cost_usd
    assert recorded_cost == round(0.0893484, 6) and c.policies[0].cost_usd is not None
    assert c.policies[0].cost_usd <= recorded_cost
    scaled = counterfactual(run_dir, [], load_prices(), scale_to_recorded=True)
    assert scaled.policies[0].prompt_tokens == pytest.approx(61068, abs=17)
    assert scaled.policies[0].cost_usd is not None and scaled.policies[0].cost_usd <= recorded_cost


def test_a_forked_summary_is_priced_with_the_prefix_it_shares_with_the_agents_prompts(tmp_path):
    run_dir = imported(tmp_path, documents.mini_v1())
    tight = HarnessPolicy(
        name="tight",
        context=[
            Compact(
                trigger_tokens=250,
                keep_first_tokens=100,
                keep_recent_steps=0,
                layout="append",
                summariser_prompt="fork",
            )
        ],
    )
    f = counterfactual(run_dir, [tight], load_prices()).policies[1]
    s = f.summariser
    assert f.compactions >= 1 and 0 < s.cached_tokens < s.prompt_tokens
    by_hand = ((s.prompt_tokens - s.cached_tokens) * 2.0 + s.cached_tokens * 0.2 + s.completion_tokens * 12.0) / 1e6
    assert f.summariser_cost_usd == pytest.approx(by_hand)
    assert f.cost_usd == pytest.approx(sum(st.cost_usd for st in f.steps) + by_hand)
