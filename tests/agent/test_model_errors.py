"""Model transport errors are retried with backoff; permanent ones stop at once.

The model here is a test double that raises the harness's own error types: the
real providers over real HTTP are tested with the provider clients.
"""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.errors import PermanentModelError, TransientModelError
from core.policy import ErrorPolicy, HarnessPolicy
from tests.agent.helpers import call, events

FAST = HarnessPolicy(errors=ErrorPolicy(model_attempts=3, backoff_multiplier_s=0.01, backoff_max_s=0.05))


class FlakyModelDouble(ScriptedModel):
    """Fails according to a plan before each scripted reply."""

    def __init__(self, replies, plan):
        super().__init__(replies)
        self.plan = list(plan)

    def complete(self, messages, tools, params):
        if self.plan:
            failure = self.plan.pop(0)
            if failure is not None:
                raise failure
        return super().complete(messages, tools, params)


def go(tmp_path, plan):
    model = FlakyModelDouble([call("shell", command="true"), call("submit", answer="ok")], plan)
    return start(RunSpec(Task(prompt="x"), model, FAST, tmp_path))


def test_transient_errors_are_retried_and_the_run_continues(tmp_path):
    plan = [TransientModelError("429 rate limited", retry_after=0.01), TransientModelError("502"), None]
    summary, run_dir = go(tmp_path, plan)
    assert summary.stop_reason == "submitted" and summary.model_failures == 2
    failed = [e for e in events(run_dir) if e["type"] == "model_failed"]
    assert [f["transient"] for f in failed] == [True, True] and "429" in failed[0]["message"]


def test_retries_give_up_after_the_attempt_budget(tmp_path):
    summary, _ = go(tmp_path, [TransientModelError("connection reset")] * 3)
    assert summary.stop_reason == "model_unavailable" and "after 3 attempts" in summary.message
    assert summary.model_failures == 3


def test_a_permanent_error_stops_at_once_with_its_message(tmp_path):
    summary, run_dir = go(tmp_path, [PermanentModelError("401 Unauthorized: check OPENAI_API_KEY")])
    assert summary.stop_reason == "model_error" and "401 Unauthorized" in summary.message
    assert summary.model_failures == 1 and events(run_dir)[-1]["type"] == "run_stopped"


def test_an_unexpected_exception_ends_the_run_on_the_record(tmp_path):
    summary, run_dir = go(tmp_path, [None, KeyError("choices")])
    stop = events(run_dir)[-1]
    assert stop["type"] == "run_stopped" and stop["reason"] == "harness_error"
    assert "KeyError" in stop["message"] and "step 2" in stop["message"]
    assert summary.stop_reason == "harness_error" and (run_dir / "summary.json").exists()
    assert "KeyError" in (run_dir / "artifacts" / "harness_error.txt").read_text()
