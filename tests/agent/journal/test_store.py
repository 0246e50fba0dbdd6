"""Journal integrity: every line carries its seq and a checksum. A line torn by a crash is
skipped (no event is missing); a damaged line in the middle stops `harness resume`, naming the
line, and `--repair` cuts the journal after its last good event, keeping the cut part. A run
folder that cannot be written ends the command with a one-line error, for root too."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agent.journal.lines import decode, encode
from agent.journal.store import read_events, scan
from agent.models.scripted import ScriptedModel
from agent.resume import resume
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.errors import HarnessError
from core.events import MessageAdded, ModelReplied, ToolObserved
from core.policy import ApprovalPolicy, HarnessPolicy
from core.types import Message
from tests.agent.helpers import GATED_WRITE, WRITE_READ_SUBMIT, call

runner = CliRunner()
TASK = Task(prompt="Write a.txt, read it, submit.")


def gated_run(tmp_path: Path) -> Path:
    """A run that stopped awaiting approval of its write, approved: `harness resume` would finish it."""
    _, run_dir = start(RunSpec(TASK, ScriptedModel(WRITE_READ_SUBMIT), GATED_WRITE, tmp_path))
    result = runner.invoke(app, ["approve", str(run_dir), "--call", "call_2_0", "--yes"])
    assert result.exit_code == 0, result.output
    return run_dir


def lines(run_dir: Path) -> list[bytes]:
    return (run_dir / "events.jsonl").read_bytes().splitlines(keepends=True)


def one_line(output: str) -> str:
    """The CLI's one-paragraph message, unwrapped (the console wraps it to its width, mid-word too)."""
    return output.replace("\n", "")


def test_every_line_carries_its_seq_and_a_checksum(tmp_path):
    run_dir = gated_run(tmp_path)
    rows = [json.loads(line) for line in lines(run_dir)]
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(list(r)[-1] == "crc" and len(r["crc"]) == 8 for r in rows)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), data=st.data())
def test_any_changed_byte_of_a_line_is_detected(text, data):
    line = encode(MessageAdded(seq=7, ts=1.5, step=2, message=Message(role="user", text=text)))
    assert decode(line).message.text == text
    at = data.draw(st.integers(0, len(line) - 2))  # any byte but the newline
    new = data.draw(st.integers(0, 255).filter(lambda b: b != line[at]))
    damaged = line[:at] + bytes([new]) + line[at + 1 :]
    with pytest.raises(ValueError):
        decode(damaged)


def test_a_damaged_middle_line_stops_resume_naming_the_line(tmp_path):
    run_dir = gated_run(tmp_path)
    before = lines(run_dir)
    damaged = before[4].replace(b"hello", b"jello")  # the first observation, its checksum now wrong
    assert damaged != before[4]
    (run_dir / "events.jsonl").write_bytes(b"".join(before[:4] + [damaged] + before[5:]))

    with pytest.raises(HarnessError, match="line 5 is damaged: its checksum does not match"):
        resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))
    result = runner.invoke(app, ["resume", str(run_dir)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "line 5 is damaged" in one_line(result.output) and "--repair" in one_line(result.output)
    assert lines(run_dir) == before[:4] + [damaged] + before[5:]  # nothing was written or cut
    # readers that only show the run (reports) skip the line and say so
    bad: list[int] = []
    assert len(read_events(run_dir, on_bad_line=lambda n, why: bad.append(n))) == len(before) - 1 and bad == [5]


def test_repair_cuts_after_the_last_good_event_keeps_the_cut_part_and_resumes(tmp_path):
    run_dir = gated_run(tmp_path)
    before = lines(run_dir)
    damaged = before[4].replace(b"hello", b"jello")
    (run_dir / "events.jsonl").write_bytes(b"".join(before[:4] + [damaged] + before[5:]))

    result = runner.invoke(app, ["resume", str(run_dir), "--repair", "--model", f"scripted:{script_file(tmp_path)}"])
    assert result.exit_code == 0, result.output
    assert "cut after line 4" in one_line(result.output) and "events.jsonl.damaged-1" in one_line(result.output)
    assert (run_dir / "events.jsonl.damaged-1").read_bytes() == b"".join([damaged] + before[5:])
    after = lines(run_dir)
    assert after[:4] == before[:4]  # the good part, byte for byte
    assert scan(run_dir).damage is None
    events = read_events(run_dir)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # The approval was in the cut part, so the write waits for it again; the first step is done
    # again from its journaled reply (its observation was cut), the model is not asked again for it.
    assert events[-1].type == "run_stopped" and events[-1].reason == "awaiting_approval"
    assert [e.observation.call_id for e in events if isinstance(e, ToolObserved)] == ["call_1_0"]
    assert runner.invoke(app, ["approve", str(run_dir), "--call", "call_2_0", "--yes"]).exit_code == 0
    again = runner.invoke(app, ["resume", str(run_dir), "--model", f"scripted:{script_file(tmp_path)}"])
    assert again.exit_code == 0, again.output
    events = read_events(run_dir)
    assert events[-1].reason == "submitted" and (run_dir / "workspace" / "a.txt").read_text() == "A\n"
    assert sum(isinstance(e, ModelReplied) for e in events) == 4


def script_file(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([r.model_dump(mode="json", exclude_none=True) for r in WRITE_READ_SUBMIT]))
    return path


def test_a_missing_middle_line_is_damage_too(tmp_path):
    run_dir = gated_run(tmp_path)
    before = lines(run_dir)
    (run_dir / "events.jsonl").write_bytes(b"".join(before[:3] + before[4:]))
    found = scan(run_dir)
    assert found.damage is not None and found.damage.why == "event seq 4 is missing before line 4"
    with pytest.raises(HarnessError, match="missing before line 4"):
        resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))


def test_a_torn_line_that_a_resume_wrote_past_is_not_damage(tmp_path):
    """A crash tore the last line; the reopened journal gave its seq to the next event: nothing is lost."""
    run_dir = gated_run(tmp_path)
    torn = len(lines(run_dir)) + 1
    with open(run_dir / "events.jsonl", "ab") as f:
        f.write(lines(run_dir)[-1][:40])  # a crash mid-write
    done = resume(run_dir, model=ScriptedModel(WRITE_READ_SUBMIT))
    assert done.summary.stop_reason == "submitted"
    found = scan(run_dir)
    assert found.damage is None and [b.lineno for b in found.skipped] == [torn]
    assert [e.seq for e in found.events] == list(range(1, len(found.events) + 1))


def test_resuming_in_a_read_only_run_folder_is_a_one_line_error(tmp_path, immutable):
    run_dir = gated_run(tmp_path)
    immutable(run_dir / "events.jsonl", run_dir)
    result = runner.invoke(app, ["resume", str(run_dir)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert one_line(result.output).startswith(f"error: Cannot write {run_dir}/events.jsonl: Operation not permitted")


def test_running_into_a_read_only_folder_is_a_one_line_error(tmp_path, immutable):
    out = tmp_path / "runs"
    out.mkdir()
    immutable(out)
    result = runner.invoke(
        app, ["run", "--task", "x", "--model", f"scripted:{script_file(tmp_path)}", "--out", str(out)]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Cannot create the run directory" in one_line(result.output)
    assert "Operation not permitted" in one_line(result.output)


@pytest.mark.parametrize(
    "command", [["demo", "--max-plies", "1"], ["chess", "--model", "player:random", "--games", "1"]]
)
def test_a_batch_into_a_folder_that_cannot_be_made_is_a_one_line_error_with_the_exit_code(tmp_path, command):
    (tmp_path / "a-file").write_text("")
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "a-file" / "runs")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "Cannot create the batch folder" in one_line(result.output) and "Not a directory" in one_line(result.output)


FIXTURE_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "click-bool-yes"


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["report", str(FIXTURE_RUN)], "report folder"),
        (["ab", str(FIXTURE_RUN), str(FIXTURE_RUN)], "comparison folder"),
    ],
)
def test_a_report_into_a_folder_that_cannot_be_made_is_a_one_line_error(tmp_path, command, what):
    (tmp_path / "a-file").write_text("")
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "a-file" / "out")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"Cannot create the {what}" in one_line(result.output) and "Not a directory" in one_line(result.output)


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs: a real filesystem that fills up."""
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", f"harness-test-{uuid.uuid4().hex[:6]}", str(where)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_run_that_fills_its_disk_stops_with_a_one_line_error_and_resumes_once_there_is_room(tmp_path, small_disk):
    fill = [call("shell", command="head -c 2000000 /dev/zero > big.bin; echo filled"), *WRITE_READ_SUBMIT]
    script = tmp_path / "fill.json"
    script.write_text(json.dumps([r.model_dump(mode="json", exclude_none=True) for r in fill]))
    result = runner.invoke(app, ["run", "--task", "x", "--model", f"scripted:{script}", "--out", str(small_disk)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    message = one_line(result.output[result.output.index("error: ") :])  # after the progress lines of the steps
    assert (
        message.startswith("error: Cannot write")
        and "No space left on device" in message
        and "harness resume" in message
    )
    [run_dir] = [p for p in small_disk.iterdir() if p.is_dir()]
    assert scan(run_dir).damage is None  # what was written is intact

    (run_dir / "workspace" / "big.bin").unlink()
    again = runner.invoke(app, ["resume", str(run_dir), "--model", f"scripted:{script}"])
    assert again.exit_code == 0, again.output
    assert read_events(run_dir)[-1].reason == "submitted"


def test_repair_names_each_write_it_cut_that_may_have_taken_effect(tmp_path):
    """The cut part held call 2's append, which ran: the resumed run knows nothing of it and makes it again, and
    the repair says so, naming the call, instead of leaving log.txt reading 1 2 2 3 unexplained."""
    appends = [call("shell", command=f"echo {n} >> log.txt") for n in (1, 2, 3)] + [call("submit", answer="done")]
    gated = HarnessPolicy(approval=ApprovalPolicy(per_tool={"submit": "always"}))
    _, run_dir = start(RunSpec(TASK, ScriptedModel(appends), gated, tmp_path))  # stops awaiting approval of submit
    before = lines(run_dir)
    intent = next(i for i, line in enumerate(before) if b'"call_id":"call_2_0"' in line and b"tool_intent" in line)
    (run_dir / "events.jsonl").write_bytes(
        b"".join(before[:intent] + [before[intent].replace(b"echo 2", b"echo 9")] + before[intent + 1 :])
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([r.model_dump() for r in appends]))
    result = runner.invoke(app, ["resume", str(run_dir), "--repair", "--model", f"scripted:{script}"])
    said = one_line(result.output)
    assert result.exit_code == 0, result.output
    assert 'call call_2_0 (shell {"command": "echo 9 >> log.txt"}), which ran: its result was cut too' in said
    assert 'call call_3_0 (shell {"command": "echo 3 >> log.txt"}), which ran: its result was cut too' in said
    assert "cannot be known from the journal" in said and "it may make them again" in said
    assert (run_dir / "workspace" / "log.txt").read_text() == "1\n2\n3\n2\n3\n"  # what the note warns of
