"""run_code in a local sandbox and in a Docker container: one observation per program, whatever it does, and
the account of what it changed. The calls are answered here by a stand-in for the dispatcher."""

import json

import pytest

from core.policy import CodeLimits
from tools.base import InnerReply, ToolContext
from tools.builtin import standard_tools
from tools.code_mode.tool import run_code_tool

LIMITS = CodeLimits(timeout_s=4, max_calls=5, max_output_chars=3000)


class Host:
    """Answers read_file of `missing` with the error a direct call gives, and every other call with its arguments;
    keeps the files the program's first run found."""

    def __init__(self, answer=None):
        self.made: list[tuple[str, dict]] = []
        self.files: str | None = None
        self.answer = answer

    def files_before(self) -> str | None:
        return self.files

    def record_files(self, files: str) -> None:
        self.files = files

    def call(self, tool: str, arguments: str) -> InnerReply:
        if self.answer is not None:
            return self.answer(tool, arguments)
        args = json.loads(arguments)
        self.made.append((tool, args))
        if args.get("path") == "missing":
            return InnerReply(False, "no such file or directory: missing", "error")
        return InnerReply(True, f"{tool} got {sorted(args.items())}")


def run(box, code: str, limits: CodeLimits = LIMITS, world=None, host: Host | None = None):
    host = host or Host()
    tool = run_code_tool(list(standard_tools()), limits, world)
    result = tool.run(tool.args(code=code), ToolContext(sandbox=box, timeout_s=30, program=host))
    return result, host.made


def test_calls_return_text_and_files_are_accounted_for(box):
    result, made = run(
        box,
        "out = shell(command='ls')\nprint('got:', out)\nopen('made.txt', 'w').write('x')\n"
        "import os\nos.makedirs('sub', exist_ok=True)\nopen('sub/b.txt', 'w').write('y')",
    )
    assert result.ok
    assert made == [("shell", {"command": "ls"})]
    assert "got: shell got [('command', 'ls')]" in result.text
    assert "[calls: 1 (shell ×1)]" in result.text
    assert "created made.txt, sub/b.txt" in result.text
    result, _ = run(box, "import os\nopen('made.txt', 'a').write('more')\nos.remove('sub/b.txt')")
    assert "changed made.txt" in result.text and "deleted sub/b.txt" in result.text


def test_a_failed_call_raises_tool_error_with_the_direct_calls_text(box):
    result, made = run(
        box,
        "try:\n    read_file(path='missing')\nexcept ToolError as e:\n    print('caught:', e, e.tool, e.status)\n"
        "read_file(path='missing')",
    )
    assert not result.ok
    assert "caught: no such file or directory: missing read_file error" in result.text
    assert "ToolError: no such file or directory: missing" in result.text
    assert "line 5" in result.text
    assert "call 1 (read_file) failed: no such file or directory: missing and 1 more" in result.text
    assert "harness" not in result.text.split("[the program failed]")[1].split("[calls")[0]


@pytest.mark.parametrize(
    "code, says",
    [
        ("x = 1\ny = = 2", ['File "<snippet>", line 2', "SyntaxError", "did not run"]),
        ("def f():\n    return 1 / 0\n\nf()", ["line 4, in <module>", "line 2, in f", "ZeroDivisionError"]),
        ("read_file('a.txt')", ["keyword arguments only, e.g. read_file(path=...)"]),
        ("read_file(path=open)", ["must be JSON values"]),
        ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)", ["has no network"]),
        ("print(open('/etc/passwd').read())", ["may not read /etc/passwd", "outside the workspace"]),
        ("open('/tmp/elsewhere', 'w')", ["may not write /tmp/elsewhere"]),
        ("import os\nos.listdir('/')", ["may not read /"]),
        ("import subprocess\nsubprocess.run(['ls'])", ["starts no process itself", "shell(command=...)"]),
        ("import os\nos.system('ls')", ["starts no process itself"]),
        ("import sys\nsys.exit(3)", ["the program called exit(3)"]),
        ("for i in range(10):\n    shell(command='true')", ["more than 5 tool calls", "dispatch.code.max_calls"]),
    ],
)
def test_a_bad_program_gives_one_clear_observation(box, code, says):
    result, _ = run(box, code)
    assert not result.ok
    for text in says:
        assert text in result.text
    assert "harness_runner" not in result.text and "<harness runner>" not in result.text


def test_an_endless_loop_stops_at_the_time_limit_with_its_line(box):
    result, _ = run(box, "print('started')\nwhile True:\n    pass", CodeLimits(timeout_s=1.5))
    assert result.timed_out and not result.ok
    assert result.text.startswith("started")
    assert "time limit of 1.5 s" in result.text and "(stopped at line 2: while True:)" in result.text


def test_a_flood_of_output_stops_the_program_and_keeps_the_limit(box):
    result, _ = run(box, "while True:\n    print('y' * 99)", CodeLimits(max_output_chars=5000))
    assert not result.ok
    printed, _, rest = result.text.partition("\n[the program was stopped")
    assert len(printed) == 5000
    assert "printed more than 5000 characters" in rest


def test_the_world_beyond_the_files_is_shown(box):
    result, _ = run(box, "print('x')", world=lambda: "FEN 8/8/8/8/8/8/8/K6k w - - 0 1")
    assert result.text.endswith("[now: FEN 8/8/8/8/8/8/8/K6k w - - 0 1]")


def test_the_program_sees_signatures_and_docstrings(box):
    result, _ = run(box, "import inspect\nprint(inspect.signature(read_file))\nprint(read_file.__doc__)\nprint(input)")
    assert "(*, path, start_line=1, end_line=None)" in result.text
    assert "Show a text file with line numbers" in result.text


def test_a_reply_that_ends_the_program_stops_it_at_that_call(box):
    def call(tool, arguments):
        if tool == "write_file":
            return InnerReply(True, "Wrote it.", end="Not run: the opponent replied.")
        return InnerReply(True, "ok")

    code = "write_file(path='a', content='b')\nprint('never')\nshell(command='ls')"
    result, _ = run(box, code, host=Host(call))
    assert result.ok and result.rejects_later == "Not run: the opponent replied."
    assert "never" not in result.text and "[calls: 1 (write_file ×1)]" in result.text


def test_a_run_after_a_crash_reports_the_changes_since_the_first_run(box):
    host = Host()
    first, _ = run(box, "open('again.txt', 'w').write('1')", host=host)
    assert "created again.txt" in first.text and host.files is not None
    again, _ = run(box, "open('again.txt', 'w').write('1')", host=host)  # the same program, run again after a crash
    assert "created again.txt" in again.text
    fresh, _ = run(box, "open('again.txt', 'w').write('12')")
    assert "changed again.txt" in fresh.text
