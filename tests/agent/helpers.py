"""Small builders shared by the agent tests."""

from __future__ import annotations

import json
from pathlib import Path

from agent.journal.store import Journal, RunInfo
from agent.models.scripted import ScriptedCall, ScriptedReply
from core.policy import ApprovalPolicy, HarnessPolicy


def new_journal(root: Path, run_id: str = "run") -> Journal:
    info = RunInfo(
        run_id=run_id,
        task={"id": "t"},
        model="scripted",
        sandbox="local",
        policy={"name": "default"},
        started_at="2026-01-01T00:00:00Z",
    )
    return Journal.create(root, info)


def call(name: str, **arguments) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name=name, arguments=arguments)])


def calls(*pairs: tuple[str, dict]) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedCall(name=n, arguments=a) for n, a in pairs])


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


# A four-step run that writes a file, reads it and submits; under GATED_WRITE it stops awaiting approval of its write.
WRITE_READ_SUBMIT = [
    call("shell", command="echo hello"),
    call("write_file", path="a.txt", content="A\n"),
    call("shell", command="cat a.txt"),
    call("submit", answer="done"),
]
GATED_WRITE = HarnessPolicy(approval=ApprovalPolicy(per_tool={"write_file": "always"}))
