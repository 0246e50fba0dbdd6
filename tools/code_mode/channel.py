"""The harness's end of a run_code program's channel: start the runner in the sandbox, answer its calls, collect
what it printed, until it says it is done or its time is up.

Frames are JSON lines (runner.py describes them). The workspace's files as the program's first run found them
are recorded with the host (and handed back to a run after a crash). Every call is answered by the host (the
dispatcher, through ToolContext.program) except one past `max_calls`, which ends the program before it runs. A runner that says
nothing more by its time limit (plus a grace, and plus the time its calls took on this side) is killed.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.policy import CodeLimits
from sandboxes.base import Attached
from tools.base import InnerReply, ProgramHost

RUNNER = (Path(__file__).parent / "runner.py").read_text()
# Read the first line (the runner's source and its start), run it. `-I`: no user site, no PYTHON* variables.
BOOT = (
    "import json,sys;s=json.loads(sys.stdin.buffer.readline());g={'__name__':'harness_runner'};"
    "exec(compile(s.pop('runner'),'<harness runner>','exec'),g);g['run'](s)"
)
ARGV = ["python3", "-I", "-c", BOOT]
GRACE_S = 5.0  # past the time limit, how long the runner gets to report before it is killed
STRAY_CHARS = 2000  # of what the process wrote outside frames (Python's own start-up errors), what is kept


@dataclass
class Ran:
    """How a program ended: `outcome` is the runner's (ok, error, syntax, timeout, flood, ended) or the
    harness's (killed: no report by the deadline; lost: the process ended without one)."""

    outcome: str = "lost"
    error: str | None = None
    printed: list[str] = field(default_factory=list)
    changes: dict[str, list[str]] | None = None
    calls: list[tuple[str, InnerReply]] = field(default_factory=list)  # (tool, reply), in order
    stray: str = ""

    @property
    def text(self) -> str:
        return "".join(self.printed)


def serve(process: Attached, code: str, functions: list[dict[str, Any]], limits: CodeLimits, host: ProgramHost) -> Ran:
    ran = Ran()
    start = {
        "runner": RUNNER,
        "code": code,
        "functions": functions,
        "limits": {"timeout_s": limits.timeout_s, "max_output_chars": limits.max_output_chars},
    }
    before = host.files_before()
    if before is not None:  # a run after a crash: the files are compared with what the first run found
        start["before"] = json.loads(before)
    process.send((json.dumps(start) + "\n").encode())
    deadline = time.monotonic() + limits.timeout_s + GRACE_S
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            ran.outcome = "killed"
            return ran
        try:
            buf += process.receive(min(left, 1.0))
        except EOFError:
            ran.stray = (ran.stray + buf.decode("utf-8", "replace"))[-STRAY_CHARS:]
            return ran
        while b"\n" in buf:
            line, _, buf = buf.partition(b"\n")
            frame = _frame(line)
            if frame is None:
                ran.stray = (ran.stray + line.decode("utf-8", "replace") + "\n")[-STRAY_CHARS:]
            elif frame["op"] == "out":
                ran.printed.append(str(frame["text"]))
            elif frame["op"] == "scanned":
                host.record_files(json.dumps(frame.get("files")))
                process.send(b'{"op": "go"}\n')
            elif frame["op"] == "call":
                reply = _answer(frame, ran, limits, host)
                deadline = max(deadline, time.monotonic() + GRACE_S)  # the call's time was ours, not the program's
                try:
                    process.send((json.dumps(asdict(reply)) + "\n").encode())
                except BrokenPipeError:
                    pass  # the program is gone (its time was up): its report follows or the stream ends
            elif frame["op"] == "done":
                ran.outcome, ran.error, ran.changes = frame["outcome"], frame.get("error"), frame.get("changes")
                return ran


def _answer(frame: dict[str, Any], ran: Ran, limits: CodeLimits, host: ProgramHost) -> InnerReply:
    tool = str(frame.get("tool"))
    if len(ran.calls) >= limits.max_calls:
        reply = InnerReply(
            False,
            f"Not run: the program made more than {limits.max_calls} tool calls, the most one run_code program may "
            f"make (dispatch.code.max_calls); it was stopped at this call to {tool}.",
            "rejected",
            end=f"more than {limits.max_calls} tool calls",
        )
    else:
        reply = host.call(tool, json.dumps(frame.get("args", {})))
    ran.calls.append((tool, reply))
    return reply


def _frame(line: bytes) -> dict[str, Any] | None:
    try:
        frame = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return frame if isinstance(frame, dict) and frame.get("op") in ("out", "scanned", "call", "done") else None
