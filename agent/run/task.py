"""A task: what the agent is asked to do, and how to tell that it is done."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.data_files import load_yaml
from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file

DEFAULT_SYSTEM = (
    "You are an autonomous agent working in a sandboxed Linux machine. "
    "Act only through the tools you are given; every tool call gets a result. "
    "Work step by step, check your work, and when the task is done call `submit` with your answer."
)


class Task(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = "task"
    prompt: str = Field(min_length=1)
    system: str | None = None  # None: the policy's system prompt, else the default
    files: dict[str, str] = Field(default_factory=dict, description="written into the workdir before the run")
    setup: list[str] = Field(default_factory=list, description="shell commands run before the run")
    check: str | None = Field(None, description="shell command; the goal is reached when it exits 0")
    resources: list[str] = Field(
        default_factory=list,
        description="MCP resources placed before the task in the opening prompt, as SERVER:URI; a URI may be a "
        "template filled from `task_id` and `vars`",
    )
    vars: dict[str, str] = Field(default_factory=dict, description="values MCP resource templates may name")
    repo_map: str | None = Field(
        None,
        description="a map of the repository, made when the run started (a repo_map context step) and placed after "
        "the prompt; kept here so that a resume and a replay open with the same bytes",
    )


def load_task(text_or_path: str) -> Task:
    """A task file (.yaml, .yml, .json, .txt, .md) or, when no such file exists, the task text itself."""
    path = Path(text_or_path)
    if "\n" not in text_or_path and path.is_dir():  # a path, mistyped or meant for another command: never the task
        raise HarnessError(
            f"Task {text_or_path} is a folder; pass a task file (.yaml, .json, .txt, .md) or the task's text in "
            "quotes (a Harbor task folder runs with `harness tasks run FOLDER`)."
        )
    looks_like_file = path.suffix in (".yaml", ".yml", ".json", ".txt", ".md") and "\n" not in text_or_path
    if not looks_like_file:
        return Task(prompt=text_or_path)
    raw = read_text_file(path, "task file", "Pass an existing file, or the task text itself in quotes.")
    if path.suffix in (".txt", ".md"):
        if not raw.strip():
            raise HarnessError(f"Task file {path} is empty; write the task's instructions in it.")
        return Task(id=path.stem, prompt=raw)
    try:
        data = load_yaml(raw)
    except yaml.YAMLError as e:
        raise HarnessError(f"Task file {path} is not valid YAML/JSON: {e}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"Task file {path} must hold a mapping with at least a `prompt` field.")
    data.setdefault("id", path.stem)
    try:
        return Task.model_validate(data)
    except ValidationError as e:
        raise HarnessError(describe_validation_error(e, f"Task file {path}")) from None
