"""An OAuth-protected Streamable HTTP server (the Python SDK's server auth, on loopback) is reached after
authorisation, and no token or code it issued appears in the run's record or any prompt."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent.models.scripted import ScriptedModel
from agent.run.task import Task
from agent.session import RunSpec, start
from core.mcp_settings import McpOAuth, McpServer
from core.policy import HarnessPolicy
from tests.agent.helpers import call, events
from tools.builtin import standard_tools
from tools.mcp import with_mcp
from tools.mcp.manager import McpStartError

from .conftest import SERVERS, free_port, said, wait_for_port


@pytest.fixture
def guarded(tmp_path):
    """servers/oauth.py on a free port: its URL and the file where it writes every secret it issues."""
    port, secrets = free_port(), tmp_path / "issued.txt"
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "oauth.py"), str(port), str(secrets)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", secrets
    finally:
        process.terminate()
        process.wait(10)


class Recording(ScriptedModel):
    """The scripted model, keeping every prompt it was sent."""

    def __init__(self, replies):
        super().__init__(replies)
        self.prompts: list[str] = []

    def complete(self, messages, tools, params):
        self.prompts.append("\n".join(m.text for m in messages) + "\n".join(t.description for t in tools))
        return super().complete(messages, tools, params)


def test_a_run_reaches_the_server_after_authorising_and_records_no_token(guarded, tmp_path):
    url, secrets = guarded
    server = McpServer(
        name="vault", url=url, approve="never", oauth=McpOAuth(authorize="fetch", redirect_port=free_port())
    )
    policy = HarnessPolicy(mcp=[server], mcp_resources=["vault:vault://notes"])
    model = Recording([call("vault__vault", key="answer"), call("submit", answer="42")])
    summary, run_dir = start(RunSpec(Task(prompt="Read the vault."), model, policy, tmp_path / "runs"))

    assert summary.stop_reason == "submitted"
    [observed] = [
        e for e in events(run_dir) if e["type"] == "tool_observed" and e["observation"]["tool"] == "vault__vault"
    ]
    assert said(observed["observation"]["text"], "vault") == "vault[answer] = 42"
    assert "only to authorised clients" in model.prompts[0]  # the placed resource came through the same auth

    issued = secrets.read_text().split()
    assert any(s.startswith("access_") for s in issued) and any(s.startswith("code_") for s in issued)
    record = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    for secret in issued:
        assert secret not in record, f"{secret[:12]}… is in the run directory"
        assert not any(secret in prompt for prompt in model.prompts)


def test_without_oauth_settings_the_server_refuses_and_says_so(guarded):
    url, _ = guarded
    with pytest.raises(McpStartError) as refused:
        with with_mcp([McpServer(name="vault", url=url)], standard_tools()):
            pass
    assert "vault" in str(refused.value) and "401" in str(refused.value)
