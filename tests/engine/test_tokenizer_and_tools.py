"""Tokenizer and chat template from the GGUF metadata; the Hermes tool format and its parser."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import parse_tool_calls
from engine.tool_format import _call_text

TEXTS = [
    "Hello, world!",
    "The year 2024 had 366 days; 3.14159 is pi.",
    "def f(x):\n\treturn x ** 2  # square\n\n\n",
    "Ünïcödé — emojis 🎉🚀 and 中文字符",
    "   leading spaces and trailing   ",
    "<|im_start|>user\nhi<|im_end|>\n",
]


@pytest.fixture(scope="module")
def hf_tokenizer():
    from transformers import AutoTokenizer

    from engine import default_model_path

    path = default_model_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def test_encoding_matches_the_transformers_gguf_tokenizer(engine, hf_tokenizer):
    for text in TEXTS:
        ids = engine.encode(text)
        assert ids == hf_tokenizer.encode(text, add_special_tokens=False), text
        assert engine.tokenizer.decode(ids, skip_special_tokens=False) == text


def test_chat_template_comes_from_the_model_file(engine):
    text = engine.tokenizer.render_chat([{"role": "user", "content": "Hi"}])
    # SmolLM2's own template injects its default system prompt when there is none.
    assert text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert engine.encode_chat([{"role": "user", "content": "Hi"}])[0] == 1  # <|im_start|> is one token


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_tools_calls_and_results_render_in_hermes_format(engine):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "2", "content": "rain"},
    ]
    text = engine.tokenizer.render_chat(messages, tools=[WEATHER])
    system = text.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert "<tools>\n" + json.dumps(WEATHER) + "\n</tools>" in system
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in text
    # Both results in one user turn, in order.
    assert (
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response><|im_end|>"
        in text
    )
    assert text.endswith("<|im_start|>assistant\n")
    # What the template wrote for the calls parses back into the same calls.
    reply = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    parsed = parse_tool_calls(reply)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]


def test_parser_separates_text_calls_and_errors():
    text = (
        'Let me check.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        "<tool_call>{not json}</tool_call>\n<tool_call>[1, 2]</tool_call>"
        '<tool_call>{"name": "b", "arguments": "{\\"raw\\": true}"}'  # unterminated, last
    )
    parsed = parse_tool_calls(text)
    assert parsed.content == "Let me check."
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("a", '{"x": 1}'), ("b", '{"raw": true}')]
    assert len(parsed.errors) == 2 and "invalid JSON" in parsed.errors[0]
    plain = parse_tool_calls("no calls here")
    assert plain.content == "no calls here" and plain.tool_calls == [] and plain.errors == []


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "{",
    "}",
    '"name"',
    '"arguments"',
    ":",
    ",",
    '"x"',
    "[",
    "]",
    "\n",
    "```json",
    "null",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=30).map("".join))
def test_parser_never_raises_on_malformed_output(text):
    parsed = parse_tool_calls(text)
    assert isinstance(parsed.content, str)
    for call in parsed.tool_calls:
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, str)
    if "<tool_call>" not in text:
        assert parsed.content == text and not parsed.tool_calls and not parsed.errors


@settings(max_examples=200, deadline=None)
@given(
    st.text().filter(lambda s: "<tool_call>" not in s),
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=20).filter(lambda s: "</tool_call>" not in s),
            st.dictionaries(st.text(max_size=8), json_values, max_size=4),
        ),
        max_size=3,
    ),
)
def test_rendered_calls_parse_back_exactly(prefix, calls):
    text = prefix + "\n".join(_call_text({"name": n, "arguments": a}) for n, a in calls)
    parsed = parse_tool_calls(text)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == calls
    assert parsed.errors == []
