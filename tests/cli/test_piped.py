"""What the commands print when their output is piped: plain lines as things finish, a heartbeat on a
long run, JSON for list-like commands, and nothing cut. Each test runs `harness` as a real process with
stdout a pipe, so rich sees no terminal."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.tools.mcp.conftest import SERVERS

HARNESS = str(Path(sys.executable).parent / "harness")
LONG = "a_server_named_with_32_chars_xyz"  # the longest server name allowed: rows pass 80 columns
BASIC = shlex.join([sys.executable, str(SERVERS / "basic.py")])
HEARTBEAT = re.compile(r"^step \d+, [\d,]+ prompt tokens, \d+ s, ")


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    return clean | extra


def harness(*args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([HARNESS, *args], capture_output=True, text=True, timeout=300, env=env(**extra))


def started(*args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [HARNESS, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env(**extra)
    )


def test_tools_list_json_piped_holds_every_tool_with_its_whole_name():
    done = harness("tools", "list", "--json", "--mcp", f"{LONG}={BASIC}")
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)}  # stdout is the JSON and nothing else
    assert tools[f"{LONG}__write_note"] == {
        "kind": "tool",
        "name": f"{LONG}__write_note",
        "server": LONG,
        "effect": "write",
        "asks_approval": True,
        "summary": "Pretend to store a note.",
    }
    assert tools["shell"]["server"] == "built-in" and not tools["shell"]["asks_approval"]


def test_tools_list_piped_keeps_each_row_on_one_line_uncut():
    done = harness("tools", "list", "--mcp", f"{LONG}={BASIC}")
    assert done.returncode == 0, done.stderr
    [row] = [line for line in done.stdout.splitlines() if f"{LONG}__write_note" in line]
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        f"{LONG}__write_note",
        LONG,
        "write",
        "yes",
        "Pretend to store a note.",
    ]
    assert "\x1b[" not in done.stdout  # no colour codes in a pipe


def test_policies_json_lists_every_preset():
    from core.presets import PRESETS

    done = harness("policies", "--json")
    assert done.returncode == 0, done.stderr
    assert [p["preset"] for p in json.loads(done.stdout)] == list(PRESETS)


def test_chess_prints_a_line_per_game_while_the_batch_is_still_playing(tmp_path):
    # Full-strength Stockfish thinks a whole second a move, so the second game is still being played when the first
    # game's line is read, and heartbeats come during each game.
    proc = started(
        "chess",
        "--games",
        "2",
        "--model",
        "player:random",
        "--opponent",
        "stockfish:skill=20,time=1",
        "--max-plies",
        "6",
        "--analysis-depth",
        "0",
        "--out",
        str(tmp_path),
        HARNESS_HEARTBEAT_S="0.3",
    )
    lines, running_at_first = [], None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("game 1/2 done:"):
            running_at_first = proc.poll() is None
    assert proc.wait(timeout=60) == 0, "\n".join(lines)
    games = [line for line in lines if re.match(r"game \d/2 done: ", line)]
    assert re.fullmatch(r"game 1/2 done: white \S+ (win|draw|loss) \(\w+\), \d plies, [\d.]+ s", games[0]), games
    assert re.fullmatch(r"game 2/2 done: black \S+ (win|draw|loss) \(\w+\), \d plies, [\d.]+ s", games[1]), games
    assert running_at_first, "the first game's line came only when the process ended"
    assert "games: running 0 · done 2 · failed 0" in lines
    beats = [line for line in lines if re.match(r"game [12]/2, step \d+, [\d,]+ prompt tokens, \d+ s, ", line)]
    assert beats and lines.index(beats[0]) < lines.index(games[0])  # the tally a progress bar shows on a terminal
    assert lines.index(games[1]) < next(i for i, line in enumerate(lines) if line.startswith("batch folder: "))


def test_chess_json_piped_is_the_final_table_and_progress_goes_to_stderr(tmp_path):
    done = harness(
        "chess",
        "--games",
        "2",
        "--model",
        "player:random",
        "--opponent",
        "stockfish:skill=0,depth=1",
        "--max-plies",
        "6",
        "--analysis-depth",
        "0",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    [folder] = tmp_path.iterdir()  # --out is the parent of the new batch folder
    assert table["batch_folder"] == str(folder) and (folder / "batch.json").is_file()
    assert table["games"] == 2 and table["draws"] == 2 and table["win_loss"]["value"] == 0.5
    assert "game 1/2 done:" in done.stderr and "game 2/2 done:" in done.stderr


def test_a_long_run_prints_heartbeat_lines_while_it_waits(tmp_path):
    go = tmp_path / "go"
    script = tmp_path / "script.yaml"
    script.write_text(  # the shell command holds the run until the test lets it go
        f"- tool_calls: [{{name: shell, arguments: {{command: 'until [ -e {go} ]; do sleep 0.05; done'}}}}]\n"
        "- tool_calls: [{name: submit, arguments: {answer: done}}]\n"
    )
    proc = started(
        "run",
        "--task",
        "Wait.",
        "--model",
        f"scripted:{script}",
        "--out",
        str(tmp_path / "runs"),
        HARNESS_HEARTBEAT_S="0.2",
    )
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if HEARTBEAT.match(line) and "calling shell" in line:
            go.touch()  # a heartbeat came while the run was held
    assert proc.wait(timeout=60) == 0, "\n".join(lines)
    assert go.exists(), "\n".join(lines)
    [run_dir] = (tmp_path / "runs").iterdir()
    assert f"run directory: {run_dir}" in lines  # --out is the parent of the new run directory


def test_a_heartbeat_setting_that_is_not_a_positive_number_is_refused(tmp_path):
    done = harness(
        "run", "--task", "Wait.", "--model", "scripted:none.yaml", "--out", str(tmp_path), HARNESS_HEARTBEAT_S="soon"
    )
    assert done.returncode == 2 and "HARNESS_HEARTBEAT_S must be a number of seconds above 0, got 'soon'" in done.stderr


def test_swe_out_is_the_parent_of_a_new_batch_folder_and_resume_names_the_folder(docker_ready, tmp_path):
    args = ("swe", "--model", "null", "--only", "acme__configlite-41")
    done = harness(*args, "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    [batch] = tmp_path.iterdir()
    assert batch.name.startswith("swe-builtin-null-") and (batch / "report.json").is_file()
    lines = done.stdout.splitlines()
    assert lines[0] == f"batch folder: {batch}"
    [line] = [line for line in lines if line.startswith("instance ")]
    assert re.fullmatch(r"instance 1/1 done: acme__configlite-41 empty patch, \d+ steps, [\d,]+ tokens", line), line
    journal = (batch / "acme__configlite-41" / "events.jsonl").read_text()
    again = harness(*args, "--resume", str(batch), "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["empty_patch_ids"] == ["acme__configlite-41"]
    assert list(tmp_path.iterdir()) == [batch]  # the finished instance was kept, not run again
    assert (batch / "acme__configlite-41" / "events.jsonl").read_text() == journal


def test_swe_refuses_a_resume_folder_that_is_not_there_and_unknown_instance_ids(tmp_path):
    missing = harness("swe", "--model", "null", "--resume", str(tmp_path / "nope"))
    assert missing.returncode == 2 and f"--resume {tmp_path / 'nope'}: no such batch folder" in missing.stderr
    unknown = harness("swe", "--model", "null", "--only", "acme__nope-1", "--out", str(tmp_path))
    assert unknown.returncode == 2 and "--only names no instance of builtin: acme__nope-1" in unknown.stderr
    assert "acme__configlite-41" in unknown.stderr and not any(tmp_path.iterdir())
