import json

import pytest

from sandboxes.local import LocalSandbox
from tools.base import ToolContext, anthropic_schema, openai_schema
from tools.builtin import standard_tools
from tools.builtin.files import READ_FILE, REPLACE, ReadArgs, ReplaceArgs
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
