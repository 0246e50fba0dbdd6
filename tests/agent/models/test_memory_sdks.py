"""The memory tool end to end with the embedded model: through the OpenAI SDK and the Anthropic SDK against
`harness serve` (a real subprocess over HTTP), and through the in-process engine. Under `tool_choice =
required` the engine holds each call to the tool's schema (one object per command), so the 135M model sends
a command that runs; its result goes back to the model through the SDK on the next request. The store the
run leaves is the one its journal rebuilds, and a replay of the run rebuilds it too."""

from __future__ import annotations

import pytest

from agent.journal.store import read_events
from agent.memory_dir import on_disk
from agent.memory_store import MemoryStore
from agent.models import load_model
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, start
from core.events import MemoryWritten, ModelReplied, ToolObserved
from core.policy import HarnessPolicy, MemoryPolicy, ModelParams, StopPolicy
from tests.agent.helpers import new_journal
from tools.base import Registry

pytestmark = pytest.mark.model

TASK = (
    'Use the memory tool to save a note. Call it with command "create", path "/memories/notes.md" '
    'and file_text "the tests pass".'
)
POLICY = HarnessPolicy(
    name="memory-only",
    model=ModelParams(tool_choice="required", max_tokens=80),
    stop=StopPolicy(max_steps=2),
    memory=MemoryPolicy(tool=True),
)


def check(run_dir, tmp_path) -> None:
    events = read_events(run_dir)
    calls = [c for e in events if isinstance(e, ModelReplied) for c in e.reply.message.tool_calls]
    assert len(calls) == 2 and all(c.name == "memory" for c in calls), calls
    observed = [e.observation for e in events if isinstance(e, ToolObserved)]
    assert observed[0].status == "ok" and observed[0].text == "File created successfully at: /memories/notes.md"
    # The second request carried the first result back, and the store kept the note.
    assert observed[1].text == "File /memories/notes.md already exists"
    written = [e for e in events if isinstance(e, MemoryWritten)]
    assert [(x.path, x.text, x.step) for w in written for x in w.entries] == [
        ("/memories/notes.md", "the tests pass", 1)
    ]
    assert on_disk(run_dir / "memories") == {"/memories/notes.md": b"the tests pass"}
    rebuilt = MemoryStore([], "check", None, new_journal(tmp_path / "check"), written=written)
    assert rebuilt.files() == {"/memories/notes.md": "the tests pass"}
    again = replay(run_dir, out=tmp_path / "replay")
    assert again.harness == [] and on_disk(again.replay_dir / "memories") == on_disk(run_dir / "memories")


@pytest.mark.parametrize("wire", ["openai-compatible:{url}/v1#smollm2", "anthropic-compatible:{url}#smollm2"])
def test_the_memory_tool_through_an_sdk_against_harness_serve(server, wire, tmp_path):
    summary, run_dir = start(RunSpec(Task(prompt=TASK), wire.format(url=server), POLICY, tmp_path, tools=Registry()))
    assert summary.stop_reason == "step_budget", summary.message
    check(run_dir, tmp_path)


def test_the_memory_tool_through_the_embedded_engine(tmp_path):
    model = load_model("local")
    try:
        summary, run_dir = start(RunSpec(Task(prompt=TASK), model, POLICY, tmp_path, tools=Registry()))
    finally:
        model.engine.shutdown()
    assert summary.stop_reason == "step_budget", summary.message
    check(run_dir, tmp_path)
