"""The tools as functions: identifiers for any tool name, signatures and types from the JSON schema."""

import keyword

from hypothesis import given
from hypothesis import strategies as st

from tools.base import FreeArgs, Tool, ToolResult
from tools.builtin import standard_tools
from tools.code_mode.namespace import api_text, function_spec, function_specs, python_name, signature, type_text


@given(st.text(min_size=0, max_size=40))
def test_every_tool_name_becomes_an_identifier(name):
    made = python_name(name)
    assert made.isidentifier() and not keyword.iskeyword(made)


def test_names_that_are_identifiers_stay_as_they_are():
    assert python_name("read_file") == "read_file"
    assert python_name("everything__get-sum") == "everything__get_sum"
    assert python_name("class") == "class_"


def test_signatures_come_from_the_schema():
    tools = {t.name: t for t in standard_tools()}
    assert signature(function_spec(tools["read_file"])) == (
        "read_file(*, path: str, start_line: int = 1, end_line: int | None = None) -> str"
    )
    assert signature(function_spec(tools["submit"])).startswith("submit(*, ")
    assert "- shell(*, command: str" in api_text(list(tools.values()))


def test_an_outside_schema_gives_required_parameters_first():
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "when": {"type": ["string", "null"]},
        },
        "required": ["ids"],
    }
    tool = Tool("srv__x", "x", "does x", FreeArgs, "read", lambda a, c: ToolResult(""), input_schema=schema)
    spec = function_spec(tool)
    assert [p["name"] for p in spec["params"]] == ["ids", "mode", "when"]
    assert (
        signature(spec) == "srv__x(*, ids: list[int], mode: Literal['a', 'b'] = None, when: str | None = None) -> str"
    )
    assert type_text({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "int | None"


def test_two_tools_with_one_identifier_get_two_functions():
    tools = [Tool(n, n, n, FreeArgs, "read", lambda a, c: ToolResult("")) for n in ("a-b", "a_b", "a.b")]
    assert [s["name"] for s in function_specs(tools)] == ["a_b", "a_b_2", "a_b_3"]
    assert [s["tool"] for s in function_specs(tools)] == ["a-b", "a_b", "a.b"]
