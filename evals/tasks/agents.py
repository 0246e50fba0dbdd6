"""The reference agents of Harbor tasks: `oracle` runs the task's solution/solve.sh, `null` does nothing.

Both act through the ordinary shell and submit tools, as a model would, so their runs exercise the same
loop, sandbox and verifier as a real model's. The oracle's solution folder is uploaded to /solution
just before its run (as Harbor's OracleAgent does); no other agent ever sees it.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence

from agent.models.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from core.errors import HarnessError
from evals.tasks.task import HarborTask

REFERENCE_AGENTS = ("oracle", "null")
SOLUTION_DIR = "/solution"
ORACLE_LOG = "/logs/agent/oracle.txt"  # where Harbor's oracle leaves solve.sh's output


def _submit(answer: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name="submit", arguments={"answer": answer})])


def solve_command(task: HarborTask) -> str:
    """solve.sh with the task's [solution].env, its output kept where Harbor keeps it, its exit code kept."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in task.config.solution.env.items())
    run = f"{env + ' ' if env else ''}bash {SOLUTION_DIR}/solve.sh 2>&1 | tee {ORACLE_LOG}"
    return f"mkdir -p {posixpath.dirname(ORACLE_LOG)} && (set -o pipefail; {run})"  # a subshell: the shell persists


def reference_agent(name: str, task: HarborTask) -> ScriptedModel:
    if name == "oracle":
        script = [
            ScriptedReply(
                text="Running the task's solution.",
                tool_calls=[ScriptedCall(name="shell", arguments={"command": solve_command(task)})],
            ),
            _submit("Ran solution/solve.sh."),
        ]
    else:
        script = [_submit("No change.")]
    return ScriptedModel(script, name=name)


def check_oracle(tasks: Sequence[HarborTask]) -> None:
    """The oracle needs each task's solve.sh: refused before the batch starts, rather than an unresolved task."""
    missing = [t.instance_id for t in tasks if not (t.solution_dir / "solve.sh").is_file()]
    if missing:
        raise HarnessError(
            f"--model oracle runs each task's solution/solve.sh, and {', '.join(missing)} "
            f"{'has' if len(missing) == 1 else 'have'} none; leave {'it' if len(missing) == 1 else 'them'} out "
            "(--only the others) or run a model."
        )


def is_reference(spec: str) -> bool:
    return spec in REFERENCE_AGENTS
