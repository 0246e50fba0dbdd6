"""A SWE-style scripted run built to be forked: a small Python repository under git, 29 steps that edit it,
run its tests, look at the diff and append to a log, then `submit`. Every output follows from the files, so a
world rebuilt from the task's setup gives the same outputs (the setup's commit has fixed dates).

`world_after(step)` is a journal listener that, when step+1's reply is journaled (step's writes all done, the
next step's not begun), lists every file of the run's workspace with its sha256: the parent's world after that
step, read on the host (local) or through the Docker SDK (a container), independently of sandboxes.manifest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from agent.journal.store import read_events, read_run_info
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recovery.branch import LEFT_BEHIND
from agent.run.task import Task
from agent.session import RunSpec, start
from core.events import Event, ModelReplied, SandboxOpened
from core.policy import HarnessPolicy
from core.types import Message, ModelReply, Usage
from tests.agent.helpers import call

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "import unittest\n\nfrom calc import add, mul\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
)
DATES = "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z"
TASK = Task(
    id="calc-fix",
    prompt="Fix calc.add so the tests pass, then submit.",
    files={"calc.py": CALC, "test_calc.py": TESTS},
    setup=[
        "git init -q -b main . && git config user.email a@b && git config user.name a",
        f"git add -A && {DATES} git commit -qm base",
    ],
)
STEPS = 30
MEMORY = '{"goal": "fix calc.add", "failed_approaches": []}'
LEFT_OUT = ("./.git/index",)  # as sandboxes.manifest: git's cache of file times


def script(steps: int = STEPS) -> list[ScriptedReply]:
    """steps-1 working steps in a cycle of six, then submit."""
    replies = []
    for i in range(1, steps):
        kind = i % 6
        if kind == 1:
            replies.append(call("shell", command=f"echo 'step {i}' >> notes.txt && wc -l notes.txt"))
        elif kind == 2:
            replies.append(call("shell", command="python3 -B -m unittest -q test_calc 2>&1 | tail -3"))
        elif kind == 3:
            body = CALC.replace("a - b", f"a + b  # tried at step {i}")
            replies.append(call("write_file", path="calc.py", content=body))
        elif kind == 4:
            replies.append(call("shell", command="git diff --stat && git status --short"))
        elif kind == 5:
            replies.append(call("write_file", path=f"docs/step{i}.md", content=f"# step {i}\n"))
        else:
            replies.append(call("read_file", path="calc.py"))
    replies.append(call("submit", answer="calc.add fixed"))
    return replies


def model(steps: int = STEPS) -> ScriptedModel:
    return ScriptedModel(script(steps))


class FromStep:
    """The script's agent replies from reply `start` on, and a working memory for every summary request: a model
    whose place in the script does not depend on where a run's summaries fell (a fork under another context
    policy asks for them elsewhere than its parent did)."""

    def __init__(self, steps: int = STEPS, start: int = 0):
        self.script = ScriptedModel(script(steps), name="scripted:from-step")
        self.script.calls = start
        self.name = self.script.name

    def complete(self, messages, tools, params) -> ModelReply:
        if params.reply_schema is not None:
            return ModelReply(message=Message(role="assistant", text=MEMORY), usage=Usage(), finish_reason="stop")
        return self.script.complete(messages, tools, params)

    def close(self) -> None:
        """Nothing to free."""


def host_files(workspace: Path) -> dict[str, str]:
    return {
        f"./{p.relative_to(workspace)}": hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(workspace.rglob("*"))
        if p.is_file() and f"./{p.relative_to(workspace)}" not in LEFT_OUT
    }


def container_files(container_id: str, workdir: str = "/workspace") -> dict[str, str]:
    import docker

    container = docker.from_env().containers.get(container_id)
    listing = f"cd {workdir} && find . -type f -print0 | xargs -0 -r sha256sum"
    code, out = container.exec_run(["sh", "-c", listing])
    assert code == 0, out
    files = {}
    for line in out.decode().splitlines():
        digest, _, path = line.partition("  ")
        if path not in LEFT_OUT:
            files[path] = digest
    return files


class WorldAfter:
    """A journal listener keeping the run's world after `step` (see the module's docstring)."""

    def __init__(self, step: int, workspace: Path | None = None):
        self.step, self.workspace = step, workspace
        self.container: str | None = None
        self.files: dict[str, str] | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, SandboxOpened):
            self.container = event.container_id
        if isinstance(event, ModelReplied) and event.step == self.step + 1:
            if self.container is not None:
                self.files = container_files(self.container)
            else:
                assert self.workspace is not None
                self.files = host_files(self.workspace)


def branch_files(fork_dir: Path) -> dict[str, str]:
    return json.loads((fork_dir / "artifacts" / "world_at_branch.json").read_text())


def as_inherited(events: list[Event], at_step: int) -> list[dict]:
    """The parent's events of steps up to `at_step` as a fork inherits them (its own processes' records left out),
    without their seq."""
    kept = [e for e in events if e.step <= at_step and not isinstance(e, LEFT_BEHIND)]
    return [e.model_dump(mode="json", exclude={"seq"}) for e in kept]


def inherited_part(run_dir: Path) -> list[dict]:
    """The fork's inherited events (the first of its journal, as many as run.json says), without their seq."""
    info = read_run_info(run_dir)
    assert info.fork is not None
    return [e.model_dump(mode="json", exclude={"seq"}) for e in read_events(run_dir)[: info.fork.inherited]]


def scripted_parent(root: Path, replies: list[ScriptedReply], policy: HarnessPolicy) -> Path:
    """The run directory of `replies` run on TASK to their `submit`: a parent to fork."""
    summary, parent = start(RunSpec(TASK, ScriptedModel(replies), policy, root, run_id="p"))
    assert summary.stop_reason == "submitted"
    return parent
