"""Real run directories for the export tests: the real loop, a scripted model, the local sandbox.

The full run exercises what an export must carry: reasoning, a failing command, arguments that are not JSON,
a reply without a tool call (and the harness's note after it), two calls in one reply, cached and priced
usage, and a submission. A compacting run folds old steps into a working memory. The batch adds a run stopped by its step budget and one graded by a SWE grade.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.journal.fold import Folded, fold
from agent.journal.store import read_events
from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from agent.run.task import Task
from agent.session import RunSpec, start
from core.context_policy import Compact
from core.errors import HarnessError
from core.policy import HarnessPolicy, StopPolicy
from core.types import Usage
from tests.harbor_venv import run_with_harbor

HARBOR_CHECK = Path(__file__).with_name("harbor_check.py")


def reply(text: str, *calls: tuple[str, dict | str], prompt: int, cached: int = 0, reasoning: str | None = None):
    return ScriptedReply(
        text=text,
        reasoning=reasoning,
        tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in calls],
        usage=Usage(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=40, reasoning_tokens=5),
    )


FULL_SCRIPT = [
    reply("Look around.", ("shell", {"command": "ls -la"}), prompt=1200, reasoning="The workspace may be empty."),
    reply("Is there a tests folder?", ("shell", {"command": "ls tests"}), prompt=1400, cached=1150),
    reply("A broken call.", ("shell", '{"command": "ls'), prompt=1600, cached=1350),
    reply("I think I know enough now.", prompt=1800, cached=1550),
    reply(
        "Write two files.",
        ("write_file", {"path": "a.txt", "content": "a\n"}),
        ("shell", {"command": "cat a.txt"}),
        prompt=2000,
        cached=1750,
    ),
    reply("Done.", ("submit", {"answer": "a.txt holds a"}), prompt=2200, cached=1950),
]


def make_run(out: Path, task_id: str, script: list[ScriptedReply], max_steps: int = 20) -> Path:
    prices = out / "prices.toml"
    out.mkdir(parents=True, exist_ok=True)
    prices.write_text(f'[scripted."{task_id}"]\ninput = 3.0\noutput = 15.0\ncached_input = 0.1\n')
    policy = HarnessPolicy(name="export-test", stop=StopPolicy(max_steps=max_steps))
    task = Task(id=task_id, prompt=f"Task {task_id}: write a.txt holding `a`, then submit.")
    model = ScriptedModel(script, name=f"scripted:{task_id}")
    _, run_dir = start(RunSpec(task, model, policy, out, run_id=task_id, prices=prices))
    prices.unlink()
    return run_dir


@pytest.fixture(scope="session")
def full_run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("full"), "full", FULL_SCRIPT)


@pytest.fixture(scope="session")
def batch(tmp_path_factory) -> Path:
    """Three runs of one batch folder: submitted, stopped by its step budget, and graded unresolved."""
    folder = tmp_path_factory.mktemp("batch") / "swe-batch"
    make_run(folder, "full", FULL_SCRIPT)
    make_run(folder, "budget", FULL_SCRIPT, max_steps=2)
    graded = make_run(folder, "graded", FULL_SCRIPT)
    (graded / "grade.json").write_text(json.dumps({"graded": {"resolved": False}}))
    return folder


def echo(word: str) -> ScriptedReply:
    return reply(f"Next: {word}.", ("shell", {"command": f"echo {word}"}), prompt=900)


# Compaction after every third step; the run's own scripted model writes the working memory.
COMPACTING_SCRIPT = [
    echo("one"),
    echo("two"),
    echo("three"),
    ScriptedReply(text=json.dumps({"goal": "count", "plan": ["echo four"], "decisions": ["use echo"]})),
    echo("four"),
    reply("Done.", ("submit", {"answer": "4"}), prompt=700),
]


@pytest.fixture(scope="session")
def compacted_run(tmp_path_factory) -> Path:
    policy = HarnessPolicy(
        name="compacting",
        stop=StopPolicy(max_steps=20),
        context=[Compact(trigger_tokens=10**9, every_steps=3, keep_recent_steps=1, summariser_prompt="fresh")],
    )
    task = Task(id="count", prompt="Echo one to four, one a step, then submit.")
    out = tmp_path_factory.mktemp("compacted")
    _, run_dir = start(RunSpec(task, ScriptedModel(COMPACTING_SCRIPT), policy, out, run_id="count"))
    return run_dir


@pytest.fixture(scope="session")
def unstarted_run(tmp_path_factory) -> Path:
    """A run whose sandbox could not start: its journal holds only the stop."""
    out = tmp_path_factory.mktemp("unstarted")

    def no_sandbox(workspace: Path):
        raise OSError("no room for a workspace")

    task = Task(id="unstarted", prompt="Task unstarted: never reaches the model.")
    spec = RunSpec(task, ScriptedModel(FULL_SCRIPT), HarnessPolicy(), out, sandbox=no_sandbox, run_id="unstarted")
    with pytest.raises(HarnessError, match="could not be started"):
        start(spec)
    return out / "unstarted"


def folded(run_dir: Path) -> Folded:
    return fold(read_events(run_dir))


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def harbor_errors(*paths: Path) -> dict[str, list[str]]:
    """Harbor's own ATIF models and validator on each file, in the Python >= 3.12 venv `make setup` makes."""
    return run_with_harbor(HARBOR_CHECK, *paths)
