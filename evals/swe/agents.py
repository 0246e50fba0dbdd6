"""Reference agents that validate the pipeline, not a model: oracle, null and test-deleter.

Each acts only through the ordinary tools, as a model would, so a run of theirs
exercises the same loop, sandbox, submit step and grader as a real one.
"""

from __future__ import annotations

import base64
import shlex

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from evals.swe.task import SweInstance

REFERENCE_AGENTS = ("oracle", "null", "test-deleter")


def _shell(command: str) -> ScriptedCall:
    return ScriptedCall(name="shell", arguments={"command": command})


def _submit(answer: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name="submit", arguments={"answer": answer})])


def oracle(inst: SweInstance) -> list[ScriptedReply]:
    """Applies the gold patch through the shell tool, then submits."""
    encoded = base64.b64encode(inst.patch.encode()).decode()
    return [
        ScriptedReply(
            text="Applying the known fix.", tool_calls=[_shell(f"echo {encoded} | base64 -d | git apply -v")]
        ),
        _submit("Applied the fix."),
    ]


def null(inst: SweInstance) -> list[ScriptedReply]:
    """Submits without changing anything."""
    return [_submit("No change.")]


# Every tracked test file: in a tests/ or test/ folder, or named test_*.py or *_test.py.
TEST_FILES = r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$)"


def test_deleter(inst: SweInstance) -> list[ScriptedReply]:
    """Makes the suite 'green' by deleting the tests, those it can see and those the dataset names:
    grading must not be fooled."""
    files = " ".join(shlex.quote(f) for f in inst.test_files())
    command = (
        f"git ls-files -z | grep -zE {shlex.quote(TEST_FILES)} | xargs -0 rm -f; rm -f {files}; git status --short"
    )
    return [
        ScriptedReply(text="Removing the failing tests.", tool_calls=[_shell(command)]),
        _submit("Removed the failing tests."),
    ]


def reference_agent(name: str, inst: SweInstance) -> ScriptedModel:
    script = {"oracle": oracle, "null": null, "test-deleter": test_deleter}[name](inst)
    return ScriptedModel(script, name=name)


def is_reference(spec: str) -> bool:
    return spec in REFERENCE_AGENTS
