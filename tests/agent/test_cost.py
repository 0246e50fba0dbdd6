"""A run's cost: every model call priced as it is journaled, `stop.max_cost_usd` on the running total,
failed calls counted (or the total flagged a lower bound), and journals from before costs still read."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.journal.store import read_events, read_run_info
from agent.journal.summary import summarize
from agent.models.pricing import cost_usd, find_price, format_usd, load_prices
from agent.models.scripted import ScriptedModel
from agent.recovery.restore import restore
from agent.run.task import Task
from agent.session import RunSpec, start
from core.errors import HarnessError
from core.policy import ErrorPolicy, HarnessPolicy, StopPolicy
from core.types import Usage
from tests.agent.helpers import call, events
from tests.agent.models.provider_double import openai_completion, openai_error, provider, reply
from tests.agent.models.test_provider_retries import SUBMIT_OA, spec

FIXTURE = Path(__file__).parents[1] / "fixtures" / "trajectories" / "click-bool-yes"
FAST = ErrorPolicy(model_attempts=3, backoff_multiplier_s=0.01, backoff_max_s=0.05)


def price_table(tmp_path: Path, model: str, provider_name: str = "scripted") -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(f'[{provider_name}."{model}"]\ninput = 1000.0\noutput = 2000.0\ncached_input = 0.5\n')
    return path


def a_dollar_a_reply(n: int):
    """Replies that each cost $1 at the test table's price (1000 prompt tokens at $1000 per million)."""
    return [
        call("shell", command=f"echo {i}").model_copy(update={"usage": Usage(prompt_tokens=1000)}) for i in range(n)
    ]


def test_a_priced_run_stops_at_the_first_reply_that_passes_its_budget(tmp_path):
    policy = HarnessPolicy(stop=StopPolicy(max_cost_usd=2.5))
    prices = price_table(tmp_path, "scripted")
    summary, run_dir = start(
        RunSpec(Task(prompt="spend"), ScriptedModel(a_dollar_a_reply(10)), policy, tmp_path / "runs", prices=prices)
    )
    assert summary.stop_reason == "max_cost" and summary.steps == 3
    assert "stop.max_cost_usd" in summary.message and "$3.00," in summary.message
    assert [e["cost_usd"] for e in events(run_dir) if e["type"] == "model_replied"] == [1.0, 1.0, 1.0]
    assert summary.cost_usd == pytest.approx(3.0) and summary.unpriced_calls == 0
    assert read_run_info(run_dir).price == find_price("scripted", load_prices(prices))


def test_a_budget_without_a_price_for_the_model_fails_at_start_and_says_how_to_fix_it(tmp_path):
    policy = HarnessPolicy(stop=StopPolicy(max_cost_usd=1.0))
    with pytest.raises(HarnessError, match=r"no price for model 'scripted'.*--prices FILE.*drop stop.max_cost_usd"):
        start(RunSpec(Task(prompt="spend"), ScriptedModel(a_dollar_a_reply(1)), policy, tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()  # nothing was started


def test_without_a_price_every_call_is_unknown_never_free(tmp_path):
    summary, run_dir = start(
        RunSpec(Task(prompt="go"), ScriptedModel(a_dollar_a_reply(2)), HarnessPolicy(), tmp_path, prices=None)
    )
    assert summary.cost_usd is None and summary.unpriced_calls == summary.model_calls + summary.model_failures
    assert all(e["cost_usd"] is None for e in events(run_dir) if e["type"] == "model_replied")


def test_a_failed_call_the_provider_billed_is_counted(tmp_path):
    """A 200 whose body is no reply (empty `choices`) still says what it billed: that call is priced too."""
    billed = reply(200, openai_completion(text="hi") | {"choices": []})
    with provider([billed, SUBMIT_OA]) as (_, url):
        prices = price_table(tmp_path, f"{url}/v1#m", provider_name="openai-compatible")
        summary, run_dir = start(
            RunSpec(Task(prompt="finish"), spec("openai", url), HarnessPolicy(errors=FAST), tmp_path, prices=prices)
        )
    price = find_price(f"openai-compatible:{url}/v1#m", load_prices(prices))
    one_call = cost_usd(price, Usage(prompt_tokens=100, completion_tokens=10, cached_tokens=64, reasoning_tokens=3))
    failed = next(e for e in events(run_dir) if e["type"] == "model_failed")
    assert failed["usage"]["prompt_tokens"] == 100 and failed["cost_usd"] == pytest.approx(one_call)
    assert summary.stop_reason == "submitted" and summary.unpriced_calls == 0
    assert summary.cost_usd == pytest.approx(2 * one_call)


def test_a_failed_call_without_usage_makes_the_total_a_lower_bound(tmp_path):
    with provider([reply(500, openai_error(500, "boom")), SUBMIT_OA]) as (_, url):
        prices = price_table(tmp_path, f"{url}/v1#m", provider_name="openai-compatible")
        summary, run_dir = start(
            RunSpec(Task(prompt="finish"), spec("openai", url), HarnessPolicy(errors=FAST), tmp_path, prices=prices)
        )
    failed = next(e for e in events(run_dir) if e["type"] == "model_failed")
    assert failed["usage"] is None and failed["cost_usd"] is None
    replied = next(e for e in events(run_dir) if e["type"] == "model_replied")
    assert replied["cost_usd"] > 0 and summary.unpriced_calls == 1
    assert summary.cost_usd == pytest.approx(replied["cost_usd"])


def test_a_journal_from_before_costs_reads_with_its_cost_unknown():
    run_events = read_events(FIXTURE)
    assert '"cost_usd"' not in (FIXTURE / "events.jsonl").read_text()
    summary = summarize(run_events, read_run_info(FIXTURE), 0.0)
    assert summary.model_calls > 0 and summary.cost_usd is None
    assert summary.unpriced_calls >= summary.model_calls


def test_a_resumed_run_goes_on_from_the_cost_its_journal_holds(tmp_path):
    policy = HarnessPolicy(stop=StopPolicy(max_cost_usd=2.5))
    prices = price_table(tmp_path, "scripted")
    _, run_dir = start(
        RunSpec(Task(prompt="spend"), ScriptedModel(a_dollar_a_reply(10)), policy, tmp_path / "runs", prices=prices)
    )
    state = restore(Task(prompt="spend"), read_events(run_dir), None).state
    assert state.cost_usd == pytest.approx(3.0) and state.unpriced_calls == 0


def test_a_run_of_the_embedded_model_costs_zero_in_the_summary_and_the_report(tmp_path):
    """The engine in process (a scripted stand-in named as `--model local:PATH` names it) bills nothing per token:
    $0 with the shipped table, never unknown; a table with the user's rate counts its compute."""
    from typer.testing import CliRunner

    from cli.main import app

    model = "local:/models/SmolLM2-135M-Instruct.gguf"
    replies = [*a_dollar_a_reply(2), call("submit", answer="done")]
    summary, run_dir = start(
        RunSpec(Task(prompt="think"), ScriptedModel(replies, name=model), HarnessPolicy(), tmp_path / "runs")
    )
    assert summary.cost_usd == 0.0 and summary.unpriced_calls == 0
    md = CliRunner().invoke(app, ["report", str(run_dir), "--format", "md"]).output
    assert "unknown" not in md.split("## Findings")[0] and "$0.0000" in md
    rate = tmp_path / "rate.toml"
    rate.write_text('[local."*"]\ninput = 500.0\noutput = 0.0\n')  # $500 a million prompt tokens
    md = CliRunner().invoke(app, ["report", str(run_dir), "--format", "md", "--prices", str(rate)]).output
    assert f"**cost** {format_usd(summary.tokens.prompt * 500 / 1e6)}" in md, md
