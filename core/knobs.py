"""Every knob of a policy as (name, value, description): what `harness policies NAME` prints.

Names are paths into the policy as a policy file writes them (`stop.max_steps`,
`context[0].keep`); values are as run.json records them; descriptions are the fields' own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class Knob:
    name: str
    value: Any  # as JSON
    description: str


def knobs(model: BaseModel, prefix: str = "") -> list[Knob]:
    data = model.model_dump(mode="json")
    out: list[Knob] = []
    for field, info in type(model).model_fields.items():
        value, name = getattr(model, field), prefix + field
        if isinstance(value, BaseModel):
            out += knobs(value, name + ".")
        elif isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            for i, item in enumerate(value):
                out += knobs(item, f"{name}[{i}].")
        else:
            out.append(Knob(name, data[field], info.description or ""))
    return out
