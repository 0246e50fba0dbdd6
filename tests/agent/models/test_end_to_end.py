"""The harness end to end on the local model: `harness run` through the OpenAI client against
`harness serve` (both real subprocesses), the Anthropic client against the same server, and
the in-process `local` client. Every run journals per-step cached tokens and sums them."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from agent.models import load_model
from agent.run.task import Task
from agent.session import RunSpec, start
from core.presets import load_policy
from tests.agent.models.harness_serve import HARNESS

TASK = "Run `echo hello` in the shell, then submit the word it printed."
POLICY = """
stop:
  max_steps: 2
model:
  max_tokens: 40
  tool_choice: required
errors:
  model_attempts: 2
  backoff_multiplier_s: 0.1
"""


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "tiny.yaml"
    path.write_text(POLICY)
    return path


def check_run(run_dir: Path) -> list[dict]:
    """Per-step usage in events.jsonl, totals in summary.json; the second step hits the cache."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    usages = [e["reply"]["usage"] for e in events if e["type"] == "model_replied"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert len(usages) == 2, summary
    assert usages[1]["cached_tokens"] > 0 and usages[1]["cached_tokens"] < usages[1]["prompt_tokens"]
    tokens = summary["tokens"]
    assert tokens["prompt"] == sum(u["prompt_tokens"] for u in usages)
    assert tokens["cached"] == sum(u["cached_tokens"] for u in usages)
    assert tokens["completion"] == sum(u["completion_tokens"] for u in usages)
    assert summary["cache_hit_rate"] == round(tokens["cached"] / tokens["prompt"], 4)
    return usages


def test_harness_run_through_the_openai_client_against_harness_serve(server, policy_file, tmp_path):
    done = subprocess.run(
        [
            HARNESS,
            "run",
            "--model",
            f"openai-compatible:{server}/v1#smollm2",
            "--task",
            TASK,
            "--policy",
            str(policy_file),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    usages = check_run(run_dir)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    replies = [e["reply"] for e in events if e["type"] == "model_replied"]
    # tool_choice required: the server constrains decoding, so each step is a tool call
    assert all(r["finish_reason"] == "tool_calls" and r["message"]["tool_calls"] for r in replies), replies
    assert usages[0]["prompt_tokens"] > 0


def test_harness_run_through_the_anthropic_client_against_the_same_server(server, policy_file, tmp_path):
    summary, run_dir = start(
        RunSpec(Task(prompt=TASK), f"anthropic-compatible:{server}#smollm2", load_policy(str(policy_file)), tmp_path)
    )
    assert summary.stop_reason in ("step_budget", "submitted"), summary.message
    usages = check_run(run_dir)
    assert all(u["cache_write_tokens"] >= 0 for u in usages)


@pytest.mark.model
def test_harness_run_through_the_in_process_local_client(policy_file, tmp_path):
    summary, run_dir = start(RunSpec(Task(prompt=TASK), "local", load_policy(str(policy_file)), tmp_path))
    assert summary.stop_reason in ("step_budget", "submitted"), summary.message
    check_run(run_dir)


@pytest.mark.model
@pytest.mark.parametrize("where", ["in-process", "served"])
def test_the_summariser_of_a_tool_constrained_local_policy_always_writes_a_memory_that_parses(where, request):
    """Under the `local` preset every agent reply is a grammar-constrained tool call; a fold's
    summariser reply must instead be the working memory's JSON, held to its schema, so even the
    embedded model's memory parses (a forked request carries the agent's tools, as here). Two sampled
    replies each way: without the schema a 135M model's free text is not a memory, and with the agent's
    tool_choice the grammar makes it a tool call, so either failure shows in one; the second samples again."""
    from core.memory_types import WorkingMemory
    from core.types import Message
    from memory.summariser import ModelSummariser, SummaryRequest, fork_request, parse_memory
    from tools.builtin import STANDARD

    spec = f"openai-compatible:{request.getfixturevalue('server')}/v1#smollm2" if where == "served" else "local"
    with closing(load_model(spec)) as model:
        params = load_policy("local").model.model_copy(update={"temperature": 0.7})
        assert params.tool_choice == "required"
        prompt = [
            Message(role="system", text="You are a coding agent."),
            Message(role="user", text="The totals in ledger.py are off by one; fix it so its tests pass."),
        ]
        previous = WorkingMemory(goal="fix ledger.py")
        for seed in range(2):
            summariser = ModelSummariser(model, params.model_copy(update={"seed": seed}))
            reply = summariser.summarise(
                SummaryRequest(fork_request(prompt, previous, (1, 1)), previous, [], 256, STANDARD)
            )
            assert reply.finish_reason == "stop" and not reply.message.tool_calls
            memory, problem = parse_memory(reply.message.text)
            assert problem is None and isinstance(memory, WorkingMemory), reply.message.text
