"""Every policy field says what it does, and `harness policies NAME` prints each knob with its value and description."""

from __future__ import annotations

import json
import typing

from pydantic import BaseModel
from typer.testing import CliRunner

from cli.main import app
from core.knobs import knobs
from core.policy import HarnessPolicy
from core.presets import PRESETS

runner = CliRunner()


def models(annotation, seen: set) -> None:
    """Every pydantic model a field annotation can hold (unions, lists and dicts included)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in seen:
            seen.add(annotation)
            for info in annotation.model_fields.values():
                models(info.annotation, seen)
        return
    for arg in typing.get_args(annotation):
        models(arg, seen)


def test_every_field_of_every_policy_model_has_a_description():
    seen: set = set()
    models(HarnessPolicy, seen)
    assert {m.__name__ for m in seen} >= {
        "HarnessPolicy",
        "StopPolicy",
        "Compact",
        "MaskObservations",
        "StripReasoning",
        "DiscloseTools",
        "Limits",
        "TruncationPolicy",
        "McpServer",
        "ModelParams",
    }
    missing = [f"{m.__name__}.{name}" for m in seen for name, info in m.model_fields.items() if not info.description]
    assert missing == []


def test_knobs_name_every_leaf_with_its_value():
    for policy in PRESETS.values():
        rows = {k.name: k for k in knobs(policy)}
        assert rows["stop.max_steps"].value == policy.stop.max_steps
        for i, step in enumerate(policy.context):
            assert rows[f"context[{i}].kind"].value == step.kind
        assert all(k.description for k in rows.values())


def test_harness_policies_prints_each_knob_as_a_table_or_json():
    table = runner.invoke(app, ["policies", "lean"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    line = next(line for line in table.output.splitlines() if "context[1].keep_last" in line)
    assert " 5 " in line and "how many of the newest tool outputs stay verbatim" in line
    shown = json.loads(runner.invoke(app, ["policies", "lean", "--json"]).output)
    keep = next(k for k in shown if k["name"] == "context[1].keep_last")
    assert keep["value"] == 5 and keep["description"]
    listing = json.loads(runner.invoke(app, ["policies", "--json"]).output)
    assert {p["preset"] for p in listing} == set(PRESETS)
    unknown = runner.invoke(app, ["policies", "no_such_preset"])
    assert unknown.exit_code != 0 and "Known presets" in unknown.output
