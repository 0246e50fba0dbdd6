"""The code search tools, code mode and the agent's memory with MCP tools and `harness replay` (played back and
--execute): one run that searches, calls a real MCP server directly and from a run_code program (which calls the
code tools too) and writes its memory, then replays with no harness divergence and, executed, no change in the
world. Then the same levers in a Docker run, replayed executed in a new container.
Real parts: the local and the Docker sandbox, a real stdio MCP server (tests/tools/mcp/servers), scripted models. The
Docker, resume, Ray and rerender cells of these levers: tests/tools/code, tests/agent/recovery,
tests/evals/executors/test_levers_ray.py, tests/agent/recorded/test_rerender_levers.py."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agent.journal.store import read_events, read_run_info
from agent.memory_dir import on_disk
from agent.models.scripted import ScriptedModel
from agent.recorded.replay import replay
from agent.run.task import Task
from agent.session import RunSpec, SandboxSpec, start
from cli.main import app
from core.events import InnerObserved, MemoryWritten, ToolObserved
from core.policy import DispatchPolicy
from core.presets import PRESETS, memory_on
from tests.agent.helpers import call
from tests.sandboxes.conftest import docker_ready  # noqa: F401  (the real engine, started once)
from tests.tools.code.repos import SHOP
from tests.tools.mcp.conftest import stdio

TASK = Task(id="shop", prompt="Cart.apply_discount applies the discount rate wrongly.", files=SHOP)
COMMIT = "git init -q && git add -A && git -c user.email=t@example.com -c user.name=t commit -qm base"
PROGRAM = (
    "print(notes__echo(text='from a program'))\n"
    "print(find_symbol(name='clamp').splitlines()[0])\n"
    "print(notes__write_note(text='clamp is in shop/util.py'))\n"
)
REPLIES = [
    call("search_code", query="discount rate applied to the total"),
    call("notes__echo", text="hello"),
    call("run_code", code=PROGRAM),
    call("memory", command="create", path="/memories/shop.md", file_text="clamp: shop/util.py\n"),
    call("write_file", path="shop/extra.py", content="def added_later():\n    return clamp(1, 0, 2)\n"),
    call("search_code", query="added later"),
    call("memory", command="str_replace", path="/memories/shop.md", old_str="util.py", new_str="util.py (used twice)"),
    call("submit", answer="done"),
]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def test_code_tools_code_mode_and_memory_with_an_mcp_server_replay_played_back_and_executed(tmp_path):
    notes = stdio("notes", "basic.py", approve="never", trusted=True)
    policy = memory_on(PRESETS["code_search"]).model_copy(
        update={"mcp": [notes], "dispatch": DispatchPolicy(mode="both")}
    )
    summary, run_dir = start(RunSpec(TASK, ScriptedModel(REPLIES), policy, tmp_path / "runs"))
    assert summary.stop_reason == "submitted"
    events = read_events(run_dir)
    seen = [(e.observation.tool, e.observation.text) for e in events if isinstance(e, ToolObserved)]
    assert [t for t, _ in seen] == [r.tool_calls[0].name for r in REPLIES]
    assert seen[0][1].splitlines()[1] == "1. shop/pricing.py" and seen[5][1].splitlines()[1] == "1. shop/extra.py"
    inner = [(e.observation.tool, e.observation.status) for e in events if isinstance(e, InnerObserved)]
    assert inner == [("notes__echo", "ok"), ("find_symbol", "ok"), ("notes__write_note", "ok")]
    assert "stored note: clamp is in shop/util.py" in seen[2][1] and "Definitions of 'clamp' in " in seen[2][1]
    assert "A map of the repository" in read_run_info(run_dir).task["repo_map"]
    want = {"/memories/shop.md": b"clamp: shop/util.py (used twice)\n"}
    assert on_disk(run_dir / "memories") == want
    assert sum(isinstance(e, MemoryWritten) for e in events) == 2

    played = replay(run_dir, out=tmp_path / "played")
    assert played.harness == [] and played.replayed_stop == "submitted"
    assert on_disk(played.replay_dir / "memories") == want
    executed = replay(run_dir, out=tmp_path / "executed", execute=True)
    assert executed.harness == [] and executed.replayed_stop == "submitted"
    assert executed.world == [], [d.diff for d in executed.world]  # the searches, the server and the program again
    assert on_disk(executed.replay_dir / "memories") == want
    shown = CliRunner().invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "cli"), "--execute"])
    assert shown.exit_code == 0 and "0 changed in the world" in shown.output, shown.output


def test_the_three_levers_in_a_docker_run_replay_executed_in_a_new_container(docker_ready, tmp_path):  # noqa: F811
    task = TASK.model_copy(update={"id": "shop-docker", "setup": [COMMIT]})
    program = (
        "print(find_symbol(name='clamp').splitlines()[0])\n"
        "open('own.txt', 'w').write('by the program\\n')\n"
        "print(shell(command='cat own.txt && git status --short'))\n"
    )
    replies = [
        call("search_code", query="discount rate"),
        call("run_code", code=program),
        call("memory", command="create", path="/memories/shop.md", file_text="clamp: shop/util.py\n"),
        call("submit", answer="done"),
    ]
    policy = memory_on(PRESETS["code_search"]).model_copy(update={"dispatch": DispatchPolicy(mode="both")})
    summary, run_dir = start(
        RunSpec(task, ScriptedModel(replies), policy, tmp_path / "runs", SandboxSpec(kind="docker"))
    )
    assert summary.stop_reason == "submitted"
    seen = [(e.observation.tool, e.observation.text) for e in read_events(run_dir) if isinstance(e, ToolObserved)]
    assert seen[0][1].startswith("Files for 'discount rate' in /workspace at ")
    assert "by the program\n?? own.txt" in seen[1][1] and "[files: created own.txt]" in seen[1][1], seen[1][1]
    executed = replay(run_dir, out=tmp_path / "executed", execute=True)
    assert executed.harness == [] and executed.replayed_stop == "submitted"
    assert executed.world == [], [d.diff for d in executed.world]
    assert on_disk(executed.replay_dir / "memories") == {"/memories/shop.md": b"clamp: shop/util.py\n"}
