import json
import os
import time

import pytest

from sandboxes.local import LocalSandbox
from tools.base import ToolContext, anthropic_schema, openai_schema
from tools.builtin import standard_tools
from tools.builtin.files import READ_FILE, REPLACE, WRITE_FILE, ReadArgs, ReplaceArgs, WriteArgs
from tools.builtin.search import FIND, GREP, FindArgs, GrepArgs


@pytest.fixture
def ctx(tmp_path):
    box = LocalSandbox(tmp_path)
    box.write_file("pkg/a.py", b"def f():\n    return 1\n\ndef g():\n    return 1\n")
    return ToolContext(sandbox=box, timeout_s=5)


def test_replace_refuses_zero_and_several_matches_and_says_where(ctx):
    none = REPLACE.run(ReplaceArgs(path="pkg/a.py", old="return 2", new="x"), ctx)
    assert not none.ok and "does not occur" in none.text
    many = REPLACE.run(ReplaceArgs(path="pkg/a.py", old="return 1", new="return 2"), ctx)
    assert not many.ok and "2 times" in many.text and "lines 2, 5" in many.text
    one = REPLACE.run(ReplaceArgs(path="pkg/a.py", old="def g():\n    return 1", new="def g():\n    return 2"), ctx)
    assert one.ok and "line 4" in one.text
    assert ctx.sandbox.read_file("pkg/a.py").decode().endswith("return 2\n")


def test_read_file_numbers_lines_and_honours_ranges(ctx):
    out = READ_FILE.run(ReadArgs(path="pkg/a.py", start_line=4, end_line=5), ctx)
    assert out.text.splitlines() == ["     4\tdef g():", "     5\t    return 1"]
    past = READ_FILE.run(ReadArgs(path="pkg/a.py", start_line=50), ctx)
    assert not past.ok and "5 lines" in past.text


def test_a_binary_file_is_neither_shown_raw_nor_corrupted_by_an_edit(ctx):
    image = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR return 1"
    ctx.sandbox.write_file("logo.png", image)
    shown = READ_FILE.run(ReadArgs(path="logo.png"), ctx)
    assert not shown.ok and shown.text.startswith("logo.png is not text (25 bytes; not UTF-8, or with NUL bytes)")
    edit = REPLACE.run(ReplaceArgs(path="logo.png", old="return 1", new="return 2"), ctx)
    assert not edit.ok and "`xxd logo.png | head`" in edit.text
    assert ctx.sandbox.read_file("logo.png") == image


def test_grep_and_find(ctx):
    assert GREP.run(GrepArgs(pattern="def [fg]", glob="*.py"), ctx).text.splitlines() == [
        "./pkg/a.py:1:def f():",
        "./pkg/a.py:4:def g():",
    ]
    assert "No line matches" in GREP.run(GrepArgs(pattern="zzz"), ctx).text
    assert FIND.run(FindArgs(name="*.py"), ctx).text == "./pkg/a.py"


def test_schemas_export_in_both_formats():
    for tool in standard_tools():
        o, a = openai_schema(tool), anthropic_schema(tool)
        assert o["type"] == "function" and o["function"]["name"] == tool.name == a["name"]
        assert o["function"]["parameters"] == a["input_schema"] and a["input_schema"]["type"] == "object"
        assert "title" not in json.dumps(a["input_schema"]["properties"])  # noise removed


@pytest.mark.parametrize(
    ("tool", "args", "kind"),
    [
        (READ_FILE, ReadArgs(path="pipe"), "named pipe (FIFO)"),
        (WRITE_FILE, WriteArgs(path="pipe", content="x"), "named pipe (FIFO)"),
        (REPLACE, ReplaceArgs(path="pipe", old="a", new="b"), "named pipe (FIFO)"),
        (READ_FILE, ReadArgs(path="/dev/zero"), "character device"),
        (READ_FILE, ReadArgs(path="/dev/urandom"), "character device"),
    ],
)
def test_file_tools_stop_at_the_policys_timeout_and_say_what_the_file_is(ctx, tool, args, kind):
    os.mkfifo(os.path.join(ctx.sandbox.workdir, "pipe"))
    start = time.monotonic()
    result = tool.run(args, ToolContext(sandbox=ctx.sandbox, timeout_s=1))
    assert time.monotonic() - start < 4
    assert result.timed_out and not result.ok
    verb = "writing" if tool is WRITE_FILE else "reading"
    assert result.text.startswith(f"timed out after 1 s {verb} {args.path}: it is a {kind}")
    assert READ_FILE.run(ReadArgs(path="pkg/a.py"), ctx).ok  # the sandbox goes on
    assert ctx.sandbox.exec("ls", timeout=5).output == "pipe\npkg\n"  # nothing staged or half-written left


def test_files_the_sandbox_refuses_are_one_line_with_the_cause_and_the_path_it_sees(ctx):
    ctx.sandbox.write_file("plain.txt", b"x")
    cases = [
        (READ_FILE, ReadArgs(path="missing.txt"), "no such file or directory: missing.txt"),
        (READ_FILE, ReadArgs(path="pkg"), "is a directory: pkg"),
        (REPLACE, ReplaceArgs(path="pkg/../gone.py", old="a", new="b"), "no such file or directory: gone.py"),
        (WRITE_FILE, WriteArgs(path="pkg", content="x"), "is a directory: pkg"),
        (WRITE_FILE, WriteArgs(path="plain.txt/x", content="x"), "file exists: plain.txt/x (a parent of it is a file)"),
        (READ_FILE, ReadArgs(path="plain.txt/x"), "not a directory: plain.txt/x (a parent of it is not a directory)"),
    ]
    for tool, args, line in cases:
        result = tool.run(args, ctx)
        assert (result.ok, result.timed_out, result.text) == (False, False, line)
        assert ctx.sandbox.workdir not in result.text  # the sandbox's own view of the path, not the host's
    assert ctx.sandbox.read_file("plain.txt") == b"x"
