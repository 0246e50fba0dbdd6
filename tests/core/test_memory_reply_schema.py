"""The summariser's reply schema: the working memory's, with every entry bounded, so a reply decoded
under it always closes; what it accepts at its bounds is still a valid working memory."""

from __future__ import annotations

import jsonschema
import pytest

from core.memory_types import MEMORY_REPLY_SCHEMA, WorkingMemory


def unbounded(schema, path="") -> list[str]:
    """Every string, list or map in the schema that has no bound."""
    if isinstance(schema, list):
        return [p for i, s in enumerate(schema) for p in unbounded(s, f"{path}[{i}]")]
    if not isinstance(schema, dict):
        return []
    found = [p for k, v in schema.items() for p in unbounded(v, f"{path}/{k}")]
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and "maxLength" not in schema:
        found.append(path)
    if kind == "array" and "maxItems" not in schema:
        found.append(path)
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict) and "maxProperties" not in schema:
        found.append(path)
    return found


def test_every_string_list_and_map_of_the_reply_schema_is_bounded():
    assert unbounded(MEMORY_REPLY_SCHEMA) == []


def test_a_reply_at_every_bound_is_a_working_memory():
    s, many = "x" * 120, range(3)
    reply = {
        "goal": s,
        "plan": [s for _ in many],
        "steps": [{"step": s, "status": "done"} for _ in many],
        "decisions": [s for _ in many],
        "failed_approaches": [{"approach": s, "why": s} for _ in many],
        "open_questions": [s for _ in many],
        "artifacts": [{"path": s, "note": s} for _ in many],
        "environment": {str(i): s for i in many},
    }
    jsonschema.validate(reply, MEMORY_REPLY_SCHEMA)
    assert WorkingMemory.model_validate(reply).goal == s


def test_a_reply_past_a_bound_is_refused():
    for too_long in ({"goal": "g" * 121}, {"plan": ["p"] * 4}, {"environment": {str(i): "x" for i in range(4)}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(too_long, MEMORY_REPLY_SCHEMA)


def test_the_reply_leaves_superseded_values_to_the_harness():
    assert "superseded" not in MEMORY_REPLY_SCHEMA["properties"] and "Superseded" not in MEMORY_REPLY_SCHEMA["$defs"]
