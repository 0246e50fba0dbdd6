"""A model call cut short (SIGTERM while the model is waited for, a provider that stays down, a client that
raises) makes no step: the stop, its snapshot and summary.json count only the steps the model answered, and the
resumed run asks that step again under the same number, ending as the uninterrupted run ends.

In-process runs with the scripted model and the local sandbox; the signal is a real SIGTERM the process sends
itself from inside the model call, where the run's handler ends the call (core.interrupts)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from agent.journal.store import read_events
from agent.resume import resume
from agent.session import RunSpec, start
from core.errors import TransientModelError
from core.events import ModelFailed, ModelReplied, RunStopped
from core.policy import ErrorPolicy, HarnessPolicy
from tests.agent.helpers import WRITE_READ_SUBMIT
from tests.agent.recovery.test_resume import TASK, RecordingModel, history, uninterrupted

CUT_AT = 3  # the model call cut short: steps 1 and 2 were answered before it
POLICY = HarnessPolicy(errors=ErrorPolicy(model_attempts=1))


class CutShort(RecordingModel):
    """The recording model, its CUT_AT-th call cut short once: by SIGTERM, a provider that fails, or a reply the
    client cannot read."""

    def __init__(self, prompts: list[str], how: str):
        super().__init__(WRITE_READ_SUBMIT, prompts)
        self.how = how

    def complete(self, messages, tools, params):
        if self.calls + 1 == CUT_AT:
            if self.how == "failed":
                raise TransientModelError("503 Service Unavailable")
            if self.how == "raised":
                raise KeyError("choices")  # a reply no client expected
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # the run's handler raises out of this wait
            raise AssertionError("SIGTERM did not end the model call")
        return super().complete(messages, tools, params)


@pytest.mark.parametrize(
    "how, reason", [("signal", "interrupted"), ("failed", "model_unavailable"), ("raised", "harness_error")]
)
def test_a_cut_model_call_is_no_step_and_the_resumed_run_counts_as_the_uninterrupted_one(tmp_path, how, reason):
    want, reference_summary, reference = uninterrupted(tmp_path, policy=POLICY)
    prompts: list[str] = []
    summary, run_dir = start(RunSpec(TASK, CutShort(prompts, how), POLICY, tmp_path / "cut"))
    answered = sum(isinstance(e, ModelReplied) for e in read_events(run_dir))
    assert summary.stop_reason == reason and answered == CUT_AT - 1
    assert summary.steps == answered
    stop = [e for e in read_events(run_dir) if isinstance(e, RunStopped)][-1]
    assert stop.step == answered
    assert json.loads((run_dir / "snapshot.json").read_text())["state"]["step"] == answered

    done = resume(run_dir, model=RecordingModel(WRITE_READ_SUBMIT, prompts))
    assert done.summary.stop_reason == "submitted"
    assert done.summary.steps == reference_summary.steps
    events = read_events(run_dir)
    replied = [e.step for e in events if isinstance(e, ModelReplied)]
    assert replied == [e.step for e in read_events(reference) if isinstance(e, ModelReplied)]
    assert all(e.step == CUT_AT for e in events if isinstance(e, ModelFailed))  # the failure is the step asked again
    assert prompts == want and history(run_dir) == history(reference)
