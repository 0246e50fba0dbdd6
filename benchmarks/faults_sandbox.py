"""The sandbox abuse battery: each abuse tried in a fresh Docker sandbox (those aimed at a persistent shell in a
local one too), judged contained and clearly reported.

    rows = sandbox_battery()          # list[Row]; for benchmarks/bench_faults.py's table
    rows = local_battery()            # the abuses aimed at a persistent shell, against the local sandbox
    .venv/bin/python benchmarks/faults_sandbox.py   # both

Contained: the harness process and the host are unharmed, the limit held, and the
sandbox (when it should survive) runs the next command cleanly. Clear: what the model
observes says what happened. Each row is bounded by its own timeouts (about a minute and a half in all).
Needs a running engine and the base image (`bash scripts/setup.d/10-docker.sh`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import ValidationError

from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import docker_client
from sandboxes.docker_options import DockerOptions
from sandboxes.local import LocalSandbox
from tools.base import ToolContext
from tools.builtin.files import READ_FILE, WRITE_FILE, ReadArgs, WriteArgs

SECRET = "sk-battery-host-secret"


@dataclass(frozen=True)
class Row:
    abuse: str
    tried: str
    contained: bool
    clear: bool
    observation: str  # what the model (or the person configuring) saw, shortened


def _processes(sb: DockerSandbox) -> int:
    return int(sb.exec("ls /proc | grep -c '^[0-9]'", timeout=20).output.strip() or 99)


def egress(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=5)\"", timeout=20)
    return r.exit_code != 0, "unreachable" in r.output.lower(), r.output


def fork_bomb(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec(":(){ :|:& };:", timeout=20)
    clean = sb.exec("echo clean", timeout=20).output == "clean\n"
    return clean and _processes(sb) <= 6, "process limit" in r.output, r.output


def memory_hog(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("python3 -c 'b = bytearray(4 * 1024**3)'", timeout=60)
    return r.exit_code == 137 and sb.exec("echo ok", timeout=10).output == "ok\n", "memory limit" in r.output, r.output


def disk_fill(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("head -c 2000000000 /dev/zero > fill.bin", timeout=60)
    used = int(sb.exec("stat -c %s fill.bin", timeout=10).output)
    return r.exit_code != 0 and used <= 64 << 20, "workspace /workspace is full" in r.output, r.output


def endless_output(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("yes", timeout=2)
    contained = (
        r.timed_out and len(r.output) <= sb.options.output_cap and sb.exec("echo ok", timeout=10).output == "ok\n"
    )
    return contained, r.output_capped and r.timed_out, f"{len(r.output)} characters kept, capped={r.output_capped}"


def sleep_past_timeout(sb: DockerSandbox) -> tuple[bool, bool, str]:
    start = time.monotonic()
    r = sb.exec("sleep 1000", timeout=1)
    took = time.monotonic() - start
    return took < 5 and _processes(sb) <= 6, r.timed_out and r.exit_code is None, f"timed out after {took:.1f} s"


def host_secrets(sb: DockerSandbox) -> tuple[bool, bool, str]:
    env = sb.exec("env", timeout=10).output + "\n".join(sb.container.attrs["Config"]["Env"])
    try:
        DockerOptions(env_from_host=["OPENAI_API_KEY"])
        refused = ""
    except ValidationError as e:
        refused = str(e)
    said = next((line for line in refused.splitlines() if "credentials" in line), refused or "accepted")
    return SECRET not in env, "look like credentials" in said, said


def file_tools_beyond_permissions(sb: DockerSandbox) -> tuple[bool, bool, str]:
    try:
        data = sb.read_file("/etc/shadow")
        return False, False, f"read {len(data)} bytes of /etc/shadow"
    except PermissionError as e:
        return True, (e.strerror or "").startswith("permission denied: /etc/shadow"), str(e.strerror)


def kill_the_shell(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("kill -KILL $$", timeout=10)
    clear = "the shell was killed" in r.output and "new shell" in r.output
    return sb.exec("echo ok", timeout=10).output == "ok\n", clear, r.output


def kill_the_container_from_inside(sb: DockerSandbox) -> tuple[bool, bool, str]:
    r = sb.exec("kill -KILL 1 $(cat /proc/1/task/1/children); sleep 1", timeout=30)
    return (
        sb.alive() and sb.exec("echo ok", timeout=10).output == "ok\n",
        "Operation not permitted" in r.output,
        r.output,
    )


def _works(sb: DockerSandbox | LocalSandbox) -> bool:
    """The shell and the file tools both still work."""
    where = sb.workdir if isinstance(sb, LocalSandbox) else "/workspace"
    sb.write_file(f"{where}/probe.txt", b"ok", timeout=10)
    return sb.exec(f"cat {where}/probe.txt", timeout=10).output == "ok" and sb.read_file("probe.txt") == b"ok"


def kill_every_process(sb: DockerSandbox) -> tuple[bool, bool, str]:
    sb.exec("cd /tmp && export KEPT=1; sleep 300 &", timeout=10)
    spared = sb.exec("kill -9 -1", timeout=10)  # bash's builtin spares its own shell
    kept = sb.exec('echo "$PWD $KEPT"', timeout=10).output.endswith("/tmp 1\n")
    r = sb.exec("bash -c 'kill -9 -1'", timeout=10)  # from a child, the shell goes too
    contained = sb.alive() and kept and spared.exit_code == 0 and _works(sb)
    return contained, "new shell" in r.output and "exported variables" in r.output, r.output


def busy_loop_ignoring_term(sb: DockerSandbox) -> tuple[bool, bool, str]:
    sb.exec("cd /tmp && export KEPT=1", timeout=10)
    start = time.monotonic()
    r = sb.exec("trap '' TERM; while :; do :; done", timeout=2)
    took = time.monotonic() - start
    contained = took < 5 and _processes(sb) <= 6 and _works(sb)
    clear = r.timed_out and "new shell, starting in /tmp" in r.output and "exported variables" in r.output
    return contained, clear, r.output


def pipes_and_devices(sb: DockerSandbox) -> tuple[bool, bool, str]:
    """read_file of a FIFO, /dev/zero and /dev/urandom and write_file to a FIFO, at a 2 s tool timeout."""
    sb.exec("mkfifo /workspace/pipe", timeout=10)
    ctx = ToolContext(sandbox=sb, timeout_s=2)
    calls = [
        (READ_FILE, ReadArgs(path="pipe")),
        (READ_FILE, ReadArgs(path="/dev/zero")),
        (READ_FILE, ReadArgs(path="/dev/urandom")),
        (WRITE_FILE, WriteArgs(path="pipe", content="x")),
    ]
    start = time.monotonic()
    results = [tool.run(args, ctx) for tool, args in calls]
    took = time.monotonic() - start
    clear = all(r.timed_out and ("named pipe" in r.text or "character device" in r.text) for r in results)
    return took < 4 * 2 + 6 and _works(sb), clear, f"4 calls in {took:.1f} s; " + results[0].text


def refused_files_in_one_line(sb: DockerSandbox) -> tuple[bool, bool, str]:
    """What the model sees for read-only, not-permitted, missing and directory paths: one line each."""
    sb.exec("mkdir /workspace/locked && chmod 500 /workspace/locked", timeout=10)
    ctx = ToolContext(sandbox=sb, timeout_s=10)
    results = [
        WRITE_FILE.run(WriteArgs(path="/etc/passwd", content="x"), ctx),
        READ_FILE.run(ReadArgs(path="/etc/shadow"), ctx),
        WRITE_FILE.run(WriteArgs(path="locked/new.txt", content="x"), ctx),
        READ_FILE.run(ReadArgs(path="missing.txt"), ctx),
        READ_FILE.run(ReadArgs(path="/tmp"), ctx),
    ]
    causes = [
        "read-only file system: /etc/passwd",
        "permission denied: /etc/shadow",
        "permission denied: /workspace/locked",
        "no such file or directory: /workspace/missing.txt",
        "is a directory: /tmp",
    ]
    one_line = all(not r.ok and "\n" not in r.text and "Traceback" not in r.text for r in results)
    clear = all(r.text.startswith(c) for r, c in zip(results, causes, strict=True))
    return one_line and _works(sb), clear, results[0].text


def closed_output(sb: DockerSandbox) -> tuple[bool, bool, str]:
    """A command closes the shell's stdout and stderr: the next command's output and the state a snapshot
    reads at the stop are still whole."""
    sb.exec("cd /tmp && export KEPT=1", timeout=10)
    r = sb.exec("exec 1>&-; exec 2>&-; echo lost", timeout=10)
    after = sb.exec("echo after; echo oops >&2", timeout=10).output
    state = sb.shell_state()
    contained = after == "after\noops\n" and (state.cwd, state.env) == ("/tmp", {"KEPT": "1"}) and _works(sb)
    return contained, r.output == "" and r.exit_code != 0, f"{r.output!r} (exit {r.exit_code}), then {after!r}"


def exec_another_program(sb: DockerSandbox) -> tuple[bool, bool, str]:
    """`exec` puts another program in the shell's place: one that ends, and one still running at the timeout."""
    sb.exec("cd /tmp", timeout=10)
    ended = sb.exec("exec python3 -c 'print(1)'", timeout=10)
    start = time.monotonic()
    hung = sb.exec("exec sleep 1000", timeout=2)
    took = time.monotonic() - start
    contained = took < 6 and sb.exec("pwd", timeout=10).output == "/tmp\n" and _processes(sb) <= 6 and _works(sb)
    clear = "`exec`s, which exited with status 0" in ended.output and "`exec`s in the shell's place" in hung.output
    return contained, clear, ended.output + hung.output


def binary_floods(sb: DockerSandbox | LocalSandbox) -> tuple[bool, bool, str]:
    """Endless NUL bytes and half a megabyte of random bytes: text with no raw control byte reaches the model."""
    zeros = sb.exec("cat /dev/zero", timeout=2)
    noise = sb.exec("head -c 500000 /dev/urandom; echo; echo end", timeout=10)
    raw = [c for r in (zeros, noise) for c in r.output if ord(c) < 32 and c not in "\t\n\r"]
    cap = sb.output_cap if isinstance(sb, LocalSandbox) else sb.options.output_cap
    contained = not raw and len(zeros.output) <= cap and _works(sb)
    clear = zeros.output.startswith("[binary output: ") and noise.output.endswith("end\n")
    return contained, clear, zeros.output[:120] + f" ... {len(noise.output):,} characters for 500 kB of noise"


def local_closed_output(sb: LocalSandbox) -> tuple[bool, bool, str]:
    """The local sandbox runs each command in a bash of its own: what one command closes, the next never sees."""
    r = sb.exec("exec 1>&-; exec 2>&-; echo lost", timeout=10)
    after = sb.exec("echo after; echo oops >&2", timeout=10).output
    contained = after == "after\noops\n" and _works(sb)
    return contained, r.output == "" and r.exit_code != 0, f"{r.output!r} (exit {r.exit_code}), then {after!r}"


def local_exec_another_program(sb: LocalSandbox) -> tuple[bool, bool, str]:
    """`exec` puts another program in the command's bash: one that ends, and one still running at the timeout
    (its odd length names its process on this shared host)."""
    ended = sb.exec("exec python3 -c 'print(1)'", timeout=10)
    start = time.monotonic()
    hung = sb.exec("exec sleep 1357", timeout=2)
    took = time.monotonic() - start
    left = subprocess.run(["pgrep", "-f", "sleep 1357"], capture_output=True).returncode == 0
    contained = took < 6 and not left and _works(sb)
    clear = ended.output == "1\n" and ended.exit_code == 0 and "killed at the timeout" in hung.output
    return contained, clear, ended.output + hung.output


BATTERY: list[tuple[str, str, DockerOptions, Callable[[DockerSandbox], tuple[bool, bool, str]]]] = [
    ("egress", "connect to 1.1.1.1:80", DockerOptions(), egress),
    ("fork bomb", ":(){ :|:& };: with pids=64", DockerOptions(pids=64), fork_bomb),
    ("memory hog", "allocate 4 GiB with memory=256m", DockerOptions(memory="256m", disk="16m"), memory_hog),
    ("disk fill", "write 2 GB with disk=64m", DockerOptions(disk="64m"), disk_fill),
    ("endless output", "yes, 2 s timeout", DockerOptions(), endless_output),
    ("sleep past timeout", "sleep 1000, 1 s timeout", DockerOptions(), sleep_past_timeout),
    ("host secrets", "OPENAI_API_KEY in the host env; asked for by name", DockerOptions(), host_secrets),
    ("file tools beyond permissions", "read_file /etc/shadow", DockerOptions(), file_tools_beyond_permissions),
    ("kill the shell", "kill -KILL $$", DockerOptions(), kill_the_shell),
    (
        "kill the container",
        "kill its init and idle process from inside",
        DockerOptions(),
        kill_the_container_from_inside,
    ),
    ("kill every process", "kill -9 -1, as the builtin and from a child", DockerOptions(), kill_every_process),
    ("busy loop ignoring SIGTERM", "trap '' TERM; while :; do :; done, 2 s", DockerOptions(), busy_loop_ignoring_term),
    (
        "pipes and devices",
        "read_file FIFO, /dev/zero, /dev/urandom; write_file FIFO; 2 s",
        DockerOptions(),
        pipes_and_devices,
    ),
    ("closed output", "exec 1>&-; exec 2>&-, then the next command and the state", DockerOptions(), closed_output),
    (
        "exec another program",
        "exec python3 -c 'print(1)'; exec sleep 1000 at a 2 s timeout",
        DockerOptions(),
        exec_another_program,
    ),
    ("binary floods", "cat /dev/zero (2 s), 500 kB of /dev/urandom", DockerOptions(), binary_floods),
    (
        "refused files",
        "write /etc/passwd, read /etc/shadow, a locked dir, missing, a dir",
        DockerOptions(),
        refused_files_in_one_line,
    ),
]


# The abuses aimed at a persistent shell, against the local sandbox (each command a bash of its own).
LOCAL_BATTERY: list[tuple[str, str, Callable[[LocalSandbox], tuple[bool, bool, str]]]] = [
    ("closed output (local)", "exec 1>&-; exec 2>&-, then the next command", local_closed_output),
    (
        "exec another program (local)",
        "exec python3 -c 'print(1)'; exec sleep 1357 at a 2 s timeout",
        local_exec_another_program,
    ),
    ("binary floods (local)", "cat /dev/zero (2 s), 500 kB of /dev/urandom", binary_floods),
]


def local_battery() -> list[Row]:
    """LOCAL_BATTERY, each abuse in a fresh local sandbox; an exception escaping it counts as not contained."""
    rows = []
    for abuse, tried, attempt in LOCAL_BATTERY:
        with tempfile.TemporaryDirectory(prefix="faults-local-") as tmp:
            sb = LocalSandbox(Path(tmp, "work"))
            try:
                contained, clear, observation = attempt(sb)
            except Exception as e:  # the row records it: the battery goes on
                contained, clear, observation = False, False, f"{type(e).__name__}: {e}"
            finally:
                sb.close()
        rows.append(Row(abuse, tried, contained, clear, " ".join(observation.split())[-200:]))
    return rows


def sandbox_battery(client=None) -> list[Row]:
    """Run every abuse in its own sandbox; an exception escaping the sandbox counts as not contained."""
    client = client or docker_client()
    rows = []
    before = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = SECRET
    try:
        for abuse, tried, options, attempt in BATTERY:
            try:
                with DockerSandbox.start(options, client=client) as sb:
                    contained, clear, observation = attempt(sb)
            except Exception as e:  # the row records it: the battery goes on
                contained, clear, observation = False, False, f"{type(e).__name__}: {e}"
            rows.append(Row(abuse, tried, contained, clear, " ".join(observation.split())[-200:]))
    finally:
        if before is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = before
    return rows


def main() -> None:
    rows = sandbox_battery() + local_battery()
    print(f"{'abuse':<30}{'contained':>10}{'clear':>7}  observation")
    for r in rows:
        print(
            f"{r.abuse:<30}{'yes' if r.contained else 'NO':>10}{'yes' if r.clear else 'NO':>7}  {r.observation[-90:]}"
        )
    print(f"{sum(r.contained for r in rows)}/{len(rows)} contained, {sum(r.clear for r in rows)}/{len(rows)} clear")


if __name__ == "__main__":
    main()
