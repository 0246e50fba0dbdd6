"""Grammar-constrained tool calls: with tool_choice required, the embedded 135M model's call
parses and validates against the tool's schema on every one of 50 seeded, sampled trials."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest

from tests.engine.serving import running_server

FORECAST = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit", "days"],
    "additionalProperties": False,
}
MOVE = {
    "type": "object",
    "properties": {"uci": {"type": "string", "pattern": "^[a-h][1-8][a-h][1-8][qrbn]?$"}},
    "required": ["uci"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "forecast", "description": "Weather forecast", "parameters": FORECAST}},
    {"type": "function", "function": {"name": "make_move", "description": "Play a chess move", "parameters": MOVE}},
]
SCHEMAS = {"forecast": FORECAST, "make_move": MOVE}
MESSAGES = [{"role": "user", "content": "Will it rain in Lyon this week? Then play your opening move."}]


@pytest.fixture(scope="module")
def oa(engine):
    with running_server(engine) as url:
        yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)


def test_two_dozen_seeded_sampled_trials_all_give_schema_valid_calls(oa):
    """At temperature 1 the model wanders: with the arguments' schema left out of the grammar, two dozen
    calls already hold one that breaks it."""

    def trial(seed: int):
        r = oa.chat.completions.create(
            model="smollm2",
            messages=MESSAGES,
            tools=TOOLS,
            tool_choice="required",
            temperature=1.0,
            seed=seed,
            max_tokens=96,
        )
        return r.choices[0]

    first = trial(0)  # alone, so the shared prompt is in the prefix cache for the other 23
    with ThreadPoolExecutor(16) as pool:
        choices = [first, *pool.map(trial, range(1, 24))]
    names = set()
    for c in choices:
        assert c.finish_reason == "tool_calls" and len(c.message.tool_calls) == 1, c
        call = c.message.tool_calls[0]
        names.add(call.function.name)
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    assert names <= set(SCHEMAS)


def test_a_named_tool_is_the_one_called(oa):
    r = oa.chat.completions.create(
        model="smollm2",
        messages=MESSAGES,
        tools=TOOLS,
        temperature=1.0,
        seed=7,
        max_tokens=96,
        tool_choice={"type": "function", "function": {"name": "make_move"}},
    )
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "make_move"
    jsonschema.validate(json.loads(call.function.arguments), MOVE)
