"""The tools a run offered, as its run directory keeps them: named in run.json, whole in artifacts/tools.json."""

from __future__ import annotations

import json
from pathlib import Path

from agent.journal.store import Journal, RunInfo, write_json_atomic
from tools.base import Registry, ToolRecord, record

PROGRAM_TOOLS = "program_tools.json"  # in artifacts/: the tools a run_code program could call


def record_tools(journal: Journal, info: RunInfo, tools: Registry, program_tools: Registry | None = None) -> None:
    """run.json names each tool offered (with its server, effect and schema hash); artifacts/tools.json
    keeps the texts and schemas, which rerender and reports price; artifacts/program_tools.json, in code mode,
    those a run_code program could call, which a replay plays back."""
    records = [record(t) for t in tools]
    journal.store_artifact("tools.json", json.dumps([r.model_dump(mode="json") for r in records], indent=1))
    if program_tools is not None:
        inner = [record(t).model_dump(mode="json") for t in program_tools]
        journal.store_artifact(PROGRAM_TOOLS, json.dumps(inner, indent=1))
    offered = [
        {"name": r.name, "server": r.server, "effect": r.effect.value, "schema_sha256": r.schema_sha256}
        for r in records
    ]
    write_json_atomic(journal.dir / "run.json", info.model_copy(update={"tools": offered}).model_dump(mode="json"))


def recorded_tools(run_dir: Path, name: str = "tools.json") -> list[ToolRecord] | None:
    """The tools a run offered (or, `name` PROGRAM_TOOLS, those its programs could call), as it recorded them;
    None for runs recorded before tool sets were kept, or with no programs."""
    path = Path(run_dir) / "artifacts" / name
    if not path.exists():
        return None
    return [ToolRecord.model_validate(r) for r in json.loads(path.read_text())]
