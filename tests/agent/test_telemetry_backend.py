"""Runs' OpenTelemetry spans reach a real OTLP backend and read back with the GenAI attribute names: Arize Phoenix,
started here (its venv made by scripts/setup_phoenix.sh), receives the spans of a chess game against Stockfish and
of a SWE-style run in the Docker sandbox as they go (`--otel-endpoint`), and of a finished run sent again
(`harness export --format otel`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a Phoenix server: about a minute before the first test

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
TASK = "Write fizzbuzz.py printing 1 to 15 with Fizz, Buzz and FizzBuzz, run it, then submit."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=20) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if not PHOENIX.exists():
        pytest.skip(f"no Phoenix at {PHOENIX.relative_to(ROOT)}: `make setup` makes it (scripts/setup_phoenix.sh)")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHON"))},
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
    }
    server = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if urllib.request.urlopen(url + "/healthz", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("Phoenix did not answer /healthz in 2 minutes")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def harness(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def spans_of(url: str, run_id: str, want: int = 1) -> list[dict]:
    """The spans Phoenix holds for the run (its conversation id), waiting for them to be ingested."""
    for _ in range(60):
        data, cursor = [], ""
        while True:  # Phoenix's REST API pages its spans
            page = get(f"{url}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
            data += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        mine = [s for s in data if s["attributes"].get("gen_ai.conversation.id") == run_id]
        if len([s for s in mine if s["name"].startswith("invoke_agent")]) >= want:
            return mine
        time.sleep(0.5)
    pytest.fail(f"Phoenix holds no spans of {run_id}")


def test_a_chess_games_spans_arrive_as_it_goes_and_again_when_exported(phoenix, tmp_path):
    harness(
        "chess",
        "--model",
        "player:random",
        "--games",
        "1",
        "--max-plies",
        "6",
        "--opponent",
        "stockfish:skill=0",
        "--out",
        str(tmp_path),
        "--otel-endpoint",
        phoenix,
    )
    [run_dir] = [d for d in tmp_path.glob("*/*") if (d / "run.json").is_file()]
    spans = spans_of(phoenix, run_dir.name)
    names = {s["name"] for s in spans}
    assert {"invoke_agent harness", "chat player:random", "execute_tool get_board", "execute_tool make_move"} <= names
    [agent] = [s for s in spans if s["name"] == "invoke_agent harness"]
    assert agent["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert agent["attributes"]["gen_ai.agent.id"] == run_dir.name and agent["attributes"]["harness.stop_reason"]
    chat = next(s for s in spans if s["name"].startswith("chat "))
    for name in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens"):
        assert name in chat["attributes"]
    assert chat["attributes"]["gen_ai.operation.name"] == "chat" and chat["parent_id"] == agent["context"]["span_id"]
    tool = next(s for s in spans if s["name"] == "execute_tool make_move")
    assert tool["attributes"]["gen_ai.tool.name"] == "make_move" and tool["attributes"]["gen_ai.tool.call.id"]
    out = harness("export", str(run_dir), "--format", "otel", "--otel-endpoint", phoenix)
    assert f"sent {run_dir}" in out
    again = spans_of(phoenix, run_dir.name, want=2)
    assert len({s["context"]["trace_id"] for s in again if s["name"] == "invoke_agent harness"}) == 2


def test_a_docker_swe_style_runs_spans_carry_its_tools_usage_and_failed_command(phoenix, tmp_path):
    setup = subprocess.run(["bash", "scripts/setup.d/10-docker.sh"], cwd=ROOT, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    out = harness(
        "run",
        "--sandbox",
        "docker",
        "--model",
        "scripted:examples/demo_script.yaml",
        "--task",
        TASK,
        "--out",
        str(tmp_path),
        "--otel-endpoint",
        phoenix,
    )
    run_dir = Path(out.split("run directory: ")[1].split()[0])
    spans = spans_of(phoenix, run_dir.name)
    by_name = {s["name"] for s in spans}
    assert {"invoke_agent harness", "execute_tool shell", "execute_tool write_file", "execute_tool submit"} <= by_name
    [agent] = [s for s in spans if s["name"] == "invoke_agent harness"]
    assert agent["attributes"]["harness.stop_reason"] == "submitted"
    chats = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 5 and all("gen_ai.response.finish_reasons" in s["attributes"] for s in chats)
    failed = [s for s in spans if s["attributes"].get("error.type") == "nonzero_exit"]
    assert failed and failed[0]["name"] == "execute_tool shell" and failed[0]["status_code"] == "ERROR"


@pytest.mark.ray
def test_games_on_the_ray_executor_send_their_spans_from_the_workers(phoenix, tmp_path):
    harness(
        "chess",
        "--model",
        "player:random",
        "--games",
        "2",
        "--max-plies",
        "4",
        "--opponent",
        "stockfish:skill=0",
        "--executor",
        "ray",
        "--workers",
        "1",
        "--out",
        str(tmp_path),
        "--otel-endpoint",
        phoenix,
    )
    run_dirs = [d for d in tmp_path.glob("*/*") if (d / "run.json").is_file()]
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        names = {s["name"] for s in spans_of(phoenix, run_dir.name)}
        assert {"invoke_agent harness", "execute_tool make_move"} <= names
