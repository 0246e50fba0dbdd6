"""A fork of a run that used the rest of the harness: code mode, the agent's memory, MCP servers, an imported
run, every context preset. Real parts: the local sandbox, real MCP server processes, a real imported
trajectory; scripted models. (test_fork.py has the plain forks, test_fork_docker.py the Docker sandbox's.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.fork import fork
from agent.journal.fold import fold
from agent.journal.store import read_events, read_run_info
from agent.journal.tools import recorded_tools
from agent.memory_dir import MemoryDir, load, on_disk
from agent.memory_store import MemorySource
from agent.models.pricing import load_prices
from agent.models.scripted import ScriptedModel, ScriptedReply
from agent.recorded.replay import replay
from agent.recorded.rerender import rerender
from agent.session import RunSpec, start
from agent.tokens import counter_for
from cli.main import app
from core.context_policy import Compact
from core.events import Forked, InnerIntent, ModelReplied, RunStopped, ToolObserved
from core.memory_entries import files_of
from core.policy import DispatchPolicy, HarnessPolicy, StopPolicy
from core.presets import PRESETS, memory_on
from core.types import Usage
from evals.reports.load import load_run
from evals.reports.text import run_markdown
from tests.agent import forking
from tests.agent.helpers import call
from tools.base import recorded_tool

CODE = HarnessPolicy(name="code", dispatch=DispatchPolicy(mode="code"), stop=StopPolicy(max_steps=20))
CALLS = HarnessPolicy(name="calls", stop=StopPolicy(max_steps=20))

PROGRAMS = [
    # a write through a tool, a file the program writes itself, a read
    "write_file(path='a.txt', content='one\\n')\nopen('own.txt', 'w').write('by the program\\n')\n"
    "print(read_file(path='a.txt'))",
    "print(shell(command='cat a.txt own.txt && echo two >> a.txt'))",
    "print(read_file(path='a.txt'))",
]


def code_replies() -> list:
    return [*(call("run_code", code=p) for p in PROGRAMS), call("submit", answer="done")]


def branch(run_dir: Path) -> Forked:
    return next(e for e in read_events(run_dir) if isinstance(e, Forked))


def test_a_fork_of_a_code_mode_run_runs_its_programs_again_checked_and_replays(tmp_path):
    world = forking.WorldAfter(2, tmp_path / "p" / "workspace")
    summary, parent = start(
        RunSpec(forking.TASK, ScriptedModel(code_replies()), CODE, tmp_path, run_id="p", listeners=[world])
    )
    assert summary.stop_reason == "submitted"
    assert [e.tool for e in read_events(parent) if isinstance(e, InnerIntent)] == ["write_file", "shell"]

    made = fork(parent, 2, model=ScriptedModel(code_replies()), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"
    assert forking.branch_files(made.run_dir) == world.files  # own.txt too: the program ran again, not only its calls
    assert "4 writes run again and checked" in branch(made.run_dir).world  # 2 programs and the 2 writes they called
    assert (made.run_dir / "workspace" / "a.txt").read_text() == "one\ntwo\n"

    # under calls mode, the parent's programs still rebuild the world (with the parent's run_code)
    calls = fork(parent, 2, policy=CALLS, model=ScriptedModel(code_replies()), out=tmp_path / "c")
    assert calls.summary is not None and calls.summary.stop_reason == "submitted"
    assert forking.branch_files(calls.run_dir) == world.files

    for run in (made, calls):
        played = replay(run.run_dir, out=tmp_path / "replays")
        assert played.harness == [] and played.replayed_stop == "submitted"
    executed = replay(made.run_dir, out=tmp_path / "replays", execute=True)
    assert executed.world == [] and executed.replayed_stop == "submitted"


def test_a_program_whose_write_gives_otherwise_stops_the_fork_naming_its_call(tmp_path):
    replies = [
        call("run_code", code="print(shell(command='echo $RANDOM$RANDOM > r.txt && cat r.txt'))"),
        call("run_code", code="import random\nopen('s.txt', 'w').write(str(random.random()))\nprint('ok')"),
        call("submit", answer="done"),
    ]
    summary, parent = start(RunSpec(forking.TASK, ScriptedModel(replies), CODE, tmp_path, run_id="p"))
    assert summary.stop_reason == "submitted"
    made = fork(parent, 2, model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "world_diverged"
    stop = [e for e in read_events(made.run_dir) if isinstance(e, RunStopped)][-1]
    assert (stop.outcome["step"], stop.outcome["tool"], stop.outcome["call_id"]) == (1, "shell", "call_1_0.1")
    assert not any(isinstance(e, Forked) for e in read_events(made.run_dir))


def test_a_fork_after_an_mcp_write_is_refused_naming_it_and_one_after_mcp_reads_rebuilds(tmp_path):
    from tests.tools.mcp.conftest import stdio

    notes = stdio("notes", "basic.py", approve="never", trusted=True)  # echo is a read, write_note a write
    policy = CODE.model_copy(update={"name": "code+mcp", "mcp": [notes], "dispatch": DispatchPolicy(mode="both")})
    replies = [
        call("notes__echo", text="hello"),
        call("write_file", path="a.txt", content="1\n"),
        call("run_code", code="print(notes__write_note(text='buy milk'))"),
        call("notes__write_note", text="and bread"),
        call("submit", answer="done"),
    ]
    summary, parent = start(RunSpec(forking.TASK, ScriptedModel(replies), policy, tmp_path, run_id="p"))
    assert summary.stop_reason == "submitted"

    made = fork(parent, 2, model=ScriptedModel(replies[:2] + replies[3:]), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"  # its own write reaches the server
    assert "1 writes run again and checked" in branch(made.run_dir).world  # the echo is a read: nothing to run

    runner, forks = CliRunner(), tmp_path / "refused"
    for at, step, how in ((3, 3, "a run_code program (call call_3_0) called"), (4, 3, "a run_code program")):
        refused = runner.invoke(app, ["fork", str(parent), "--at-step", str(at), "--out", str(forks)])
        assert refused.exit_code == 2 and "Traceback" not in refused.output
        said = " ".join(refused.output.split())
        assert f"its step {step} {how}" in said and "notes__write_note (call call_3_0.1)" in said
        assert "--at-step 2" in said and "\n\n" not in refused.output.strip()
    assert not forks.exists()


def test_a_fork_under_a_policy_without_the_server_a_program_called_stops_naming_the_tool(tmp_path):
    """A program runs again whole to rebuild the world, so each function it called must be there: a fork whose
    policy drops the MCP server stops before its own steps, naming the tool, not with the program's NameError."""
    from tests.tools.mcp.conftest import stdio

    notes = stdio("notes", "basic.py", approve="never", trusted=True)
    policy = CODE.model_copy(update={"name": "code+mcp", "mcp": [notes]})
    replies = [
        call("run_code", code="print(notes__echo(text='hello'))\nwrite_file(path='a.txt', content='1\\n')"),
        call("run_code", code="print(read_file(path='a.txt'))"),
        call("submit", answer="done"),
    ]
    parent = forking.scripted_parent(tmp_path, replies, policy)
    made = fork(parent, 2, policy=CODE, model=ScriptedModel(replies), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "world_diverged"
    stop = [e for e in read_events(made.run_dir) if isinstance(e, RunStopped)][-1]
    assert (stop.outcome["step"], stop.outcome["call_id"]) == (1, "call_1_0") and "diff" not in stop.outcome
    assert "the fork offers no tool 'notes__echo', which the parent's step 1 program (call call_1_0) called" in (
        stop.message
    )
    assert not any(isinstance(e, Forked) for e in read_events(made.run_dir))
    # under the parent's own policy the same fork rebuilds and goes on
    again = fork(parent, 2, model=ScriptedModel(replies), out=tmp_path / "forks", run_id="again")
    assert again.summary is not None and again.summary.stop_reason == "submitted"


def test_a_fork_of_an_imported_run_is_one_clear_error_and_makes_nothing(tmp_path):
    from tests.evals.interop.test_published import published

    folder = published("mini-swe-agent")
    runner = CliRunner()
    done = runner.invoke(app, ["import", str(folder / "django__django-16255.traj.json"), "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    run_dir = Path(done.output.split("run directory: ")[1].strip())
    refused = runner.invoke(app, ["fork", str(run_dir), "--at-step", "2", "--out", str(tmp_path / "forks")])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "imported from mini-swe-agent" in refused.output and "\n\n" not in refused.output.strip()
    assert not (tmp_path / "forks").exists() and sorted(p.name for p in tmp_path.iterdir()) == [run_dir.name]


def test_a_fork_starts_from_the_memory_as_of_its_step_and_leaves_the_kept_store_alone(tmp_path):
    folding = memory_on(
        HarnessPolicy(
            name="fold",
            stop=StopPolicy(max_steps=20),
            context=[Compact(every_steps=2, keep_recent_steps=1, trigger_tokens=10**9)],
        )
    )
    summary = ScriptedReply(text=forking.MEMORY)  # the summariser's reply after steps 2 and 4
    view = call("memory", command="view", path="/memories/notes.md")
    replies = [
        call("memory", command="create", path="/memories/notes.md", file_text="v1\n"),
        call("shell", command="echo x > a.txt"),
        summary,
        call("memory", command="str_replace", path="/memories/notes.md", old_str="v1", new_str="v2"),
        view,
        summary,
        call("submit", answer="done"),
    ]
    kept = MemoryDir(tmp_path / "kept")
    done, parent = start(
        RunSpec(forking.TASK, ScriptedModel(replies), folding, tmp_path, run_id="p", memory=MemorySource(kept=kept))
    )
    assert done.stop_reason == "submitted" and files_of(load(kept))["/memories/notes.md"] == "v2\n"
    saved = (kept.folder / "ledger.jsonl").read_bytes()

    own = [view, call("memory", command="create", path="/memories/fork.md", file_text="mine\n"), summary]
    made = fork(parent, 2, model=ScriptedModel([*replies[:3], *own, replies[-1]]), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"
    events = read_events(made.run_dir)
    [seen] = [e.observation.text for e in events if isinstance(e, ToolObserved) and e.step == 3]
    assert "v1" in seen and "v2" not in seen  # the store as of step 2, not the parent's last
    assert on_disk(made.run_dir / "memories") == {"/memories/notes.md": b"v1\n", "/memories/fork.md": b"mine\n"}
    assert (kept.folder / "ledger.jsonl").read_bytes() == saved  # neither the inherited steps nor its own
    assert read_run_info(made.run_dir).memory.writable is False  # type: ignore[union-attr]
    # The fold after its step 4 keeps the notes its inherited step 1 wrote, as the parent's fold kept them.
    [own_fold] = [f for f in fold(events).folds if f.last_step == 3]
    assert own_fold.memory_text is not None and "/memories/notes.md (p/1" in own_fold.memory_text
    assert "/memories/fork.md (#1" in own_fold.memory_text

    played = replay(made.run_dir, out=tmp_path / "replays")
    assert played.harness == [] and played.replayed_stop == "submitted"


# Every preset: a fork at a step inside its masking or compaction window, under the parent's own policy, goes on
# exactly as its parent went: the same prompts (digest of messages and tools) at every one of its own steps.
WINDOWED = 24  # steps of the parent: about 1k tokens an output, so the 12k-token compactions fold twice or more


def windowed_script() -> list:
    replies = []
    for i in range(1, WINDOWED):
        if i % 4 == 1:
            replies.append(call("write_file", path=f"step{i}.txt", content=f"{i}\n" * 200))
        elif i % 4 == 3:
            replies.append(call("shell", command=f"echo {i} >> log.txt && wc -l log.txt"))
        else:
            replies.append(call("shell", command=f"seq {i} {i + 400}"))
    return [*replies, call("submit", answer="done")]


class Windowed(forking.FromStep):
    def __init__(self, start: int = 0):
        super().__init__(WINDOWED, start)
        self.script = ScriptedModel(windowed_script(), name="scripted:windowed")
        self.script.calls = start


def prompts(run_dir: Path, after: int) -> list[tuple[int, str | None]]:
    return [(e.step, e.prompt_sha256) for e in read_events(run_dir) if isinstance(e, ModelReplied) and e.step > after]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_fork_inside_a_window_under_its_parents_preset_goes_on_as_the_parent(tmp_path, preset):
    policy = PRESETS[preset].model_copy(update={"stop": StopPolicy(max_steps=40)})
    summary, parent = start(RunSpec(forking.TASK, Windowed(), policy, tmp_path, run_id="p"))
    assert summary.stop_reason == "submitted", summary
    reshaped = [e.step for e in fold(read_events(parent)).reshaping()]
    assert bool(reshaped) == (preset.startswith("compact")), reshaped  # the compacting presets folded
    # one step past the first fold (a compacting preset's), or inside lean's and masked_batched's windows
    for at in [reshaped[0] + 1] if reshaped else [13]:
        made = fork(parent, at, model=Windowed(at), out=tmp_path / "forks", run_id=f"at{at}")
        assert made.summary is not None and made.summary.stop_reason == "submitted", (at, made.summary)
        assert prompts(made.run_dir, at) == prompts(parent, at), (preset, at)


def test_a_forks_report_tells_the_parents_cache_figures_from_its_own(tmp_path):
    """As the embedded model reports them: each reply's prompt tokens and those its prefix cache held (a short
    run of `local` itself takes minutes on two shared cores, so a scripted model reports them here)."""

    def reply(i: int, cached: int):
        done = call("submit", answer="done") if i == 6 else call("shell", command=f"echo {i} >> log.txt")
        return done.model_copy(update={"usage": Usage(prompt_tokens=1000 + 100 * i, cached_tokens=cached)})

    parent_replies = [reply(i, 0 if i == 1 else 900 + 100 * (i - 1)) for i in range(1, 7)]
    summary, parent = start(RunSpec(forking.TASK, ScriptedModel(parent_replies), CALLS, tmp_path, run_id="p"))
    assert summary.stop_reason == "submitted"
    cold = [*parent_replies[:3], reply(4, 0), reply(5, 1300), reply(6, 1400)]  # a new process: the cache is cold
    made = fork(parent, 3, model=ScriptedModel(cold), out=tmp_path / "forks")
    assert made.summary is not None and made.summary.stop_reason == "submitted"

    text = run_markdown(load_run(made.run_dir, load_prices()))
    assert "steps 1–3 inherited: 3 steps, 3,600 prompt tokens, 2,100 cached (58% of them)" in text
    assert "its own steps: 3, 4,500 prompt tokens, 2,700 cached (60% of them); ideal prefix reuse" in text
    own = [e for e in read_events(made.run_dir) if isinstance(e, ModelReplied) and e.step > 3]
    assert own[0].prefix_reused == 0 and all(e.prefix_reused for e in own[1:])  # its reuse begins at the branch


def test_a_fork_under_each_other_preset_sends_the_prompt_harness_rerender_gives_its_step(tmp_path):
    """The context folded again at the branch is the one `harness rerender` makes under the fork's preset: the
    fork's first prompt of its own has the tokens the parent's step has re-rendered under it (with the tools the
    fork offers), at step 22: inside lean's and masked_batched's windows, past the compacting presets' first fold."""
    policy = PRESETS["append_only"].model_copy(update={"stop": StopPolicy(max_steps=40)})
    summary, parent = start(RunSpec(forking.TASK, Windowed(), policy, tmp_path, run_id="p"))
    assert summary.stop_reason == "submitted"
    events, counter = read_events(parent), counter_for("scripted")
    for name in sorted(set(PRESETS) - {"append_only"}):
        other = PRESETS[name].model_copy(update={"stop": StopPolicy(max_steps=40)})
        made = fork(parent, 21, policy=other, model=Windowed(21), out=tmp_path / "forks", run_id=name)
        assert made.summary is not None and made.summary.stop_reason == "submitted", name
        first = next(e for e in read_events(made.run_dir) if isinstance(e, ModelReplied) and e.step == 22)
        offered = [recorded_tool(r) for r in recorded_tools(made.run_dir) or ()]
        again = rerender(events, other.context, counter, [t for t in offered if t.name != "describe_tool"])
        assert [s.prompt_tokens for s in again.steps if s.step == 22] == [first.counted_tokens], name
