"""A Harbor task folder read into what a run needs: the instruction, the environment, the limits, the scripts.

    task/
      instruction.md          what the agent is told
      task.toml               timeouts, resources, network, metadata (harbor/models/task/config.py's schema)
      environment/Dockerfile  the agent's container
      tests/test.sh           the verifier, uploaded to /tests after the agent finishes
      solution/solve.sh       what the oracle runs, uploaded to /solution

Only the fields a local Docker run can honour are read; the rest of task.toml is kept as written
(`metadata`, `source`, ...) and ignored. A field this harness cannot honour (an allowlist network, GPUs,
a prebuilt `docker_image` without a Dockerfile, multi-step tasks, Windows) is refused when the task is
loaded, saying so, rather than run differently from how its author meant.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.data_files import load_toml
from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file

NetworkMode = Literal["no-network", "public", "allowlist"]
# Datasets mark their files with canary comments against training-data contamination; Harbor drops them.
CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class EnvironmentSection(_Section):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: str = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    memory: str | None = None  # deprecated in Harbor: "2G", "512M"
    storage_mb: int | None = None
    gpus: int | None = None
    workdir: str | None = None
    network_mode: NetworkMode | None = None
    allow_internet: bool | None = None  # deprecated in Harbor for network_mode
    env: dict[str, str] = Field(default_factory=dict)


class PhaseSection(_Section):
    timeout_sec: float | None = None
    network_mode: NetworkMode | None = None
    user: str | int | None = None
    env: dict[str, str] = Field(default_factory=dict)


class TaskToml(_Section):
    task: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    environment: EnvironmentSection = EnvironmentSection()
    agent: PhaseSection = PhaseSection()
    verifier: PhaseSection = PhaseSection()
    solution: PhaseSection = PhaseSection()
    steps: list[Any] | None = None


AGENT_TIMEOUT_S = 1800.0  # Harbor has no default for the agent; a run here needs one
VERIFIER_TIMEOUT_S = 600.0  # Harbor's default


class HarborTask(BaseModel):
    """One task folder, loaded; `instance_id` is its name in a batch (the folder's name)."""

    model_config = ConfigDict(frozen=True)
    instance_id: str
    folder: Path
    name: str  # task.toml's [task].name, else the folder's name
    instruction: str
    dockerfile: str
    config: TaskToml

    @property
    def environment_dir(self) -> Path:
        return self.folder / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.folder / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.folder / "solution"

    def network(self, phase: Literal["agent", "verifier"]) -> NetworkMode:
        """The phase's own network_mode, else the environment's, else its legacy allow_internet; Harbor's
        default is public."""
        env = self.config.environment
        own = (self.config.agent if phase == "agent" else self.config.verifier).network_mode
        if own is not None:
            return own
        if env.network_mode is not None:
            return env.network_mode
        if env.allow_internet is not None:
            return "public" if env.allow_internet else "no-network"
        return "public"

    def memory(self) -> str | None:
        """The memory limit as Docker writes it ("2048m"), None when the task sets none."""
        env = self.config.environment
        if env.memory_mb is not None:
            return f"{env.memory_mb}m"
        return env.memory.lower() if env.memory else None

    @property
    def agent_timeout_s(self) -> float:
        return self.config.agent.timeout_sec or AGENT_TIMEOUT_S

    @property
    def verifier_timeout_s(self) -> float:
        return self.config.verifier.timeout_sec or VERIFIER_TIMEOUT_S


def is_task_dir(path: Path) -> bool:
    return (path / "task.toml").is_file() and (path / "instruction.md").is_file()


def find_tasks(paths: list[Path]) -> list[HarborTask]:
    """Every task the paths name: a task folder itself, or a dataset folder whose subfolders are tasks."""
    tasks: list[HarborTask] = []
    for path in paths:
        if is_task_dir(path):
            tasks.append(load_task(path))
            continue
        if not path.is_dir():
            said = "is a file, not a folder" if path.exists() else "no such folder"
            raise HarnessError(f"{path}: {said}. Name a Harbor task folder or a dataset folder of them.")
        found = [p for p in sorted(path.iterdir()) if p.is_dir() and is_task_dir(p)]
        if not found:
            raise HarnessError(
                f"{path} is neither a Harbor task folder (task.toml and instruction.md) nor a folder of them."
            )
        tasks.extend(load_task(p) for p in found)
    seen: dict[str, Path] = {}
    for t in tasks:
        if t.instance_id in seen:
            raise HarnessError(
                f"Two tasks are named {t.instance_id}: {seen[t.instance_id]} and {t.folder}; "
                "a batch names each run after its task folder, so rename one."
            )
        seen[t.instance_id] = t.folder
    return tasks


def load_task(folder: Path) -> HarborTask:
    folder = folder.resolve()
    try:
        raw = load_toml(read_text_file(folder / "task.toml", "task file"))
        config = TaskToml.model_validate(raw)
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{folder / 'task.toml'} is not valid TOML: {e}") from None
    except ValidationError as e:
        raise HarnessError(describe_validation_error(e, f"{folder / 'task.toml'}")) from None
    _refuse_unsupported(folder, config)
    name = str((config.task or {}).get("name") or folder.name)
    return HarborTask(
        instance_id=folder.name,
        folder=folder,
        name=name,
        instruction=strip_canary(read_text_file(folder / "instruction.md", "task instruction")),
        dockerfile=read_text_file(folder / "environment" / "Dockerfile", "task Dockerfile"),
        config=config,
    )


def strip_canary(text: str) -> str:
    """The instruction without its leading canary comment lines and the blank lines after them, as Harbor
    shows it to an agent."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and CANARY_LINE.match(lines[i].strip()):
        i += 1
    while i < len(lines) and lines[i].strip() == "":
        i += 1
    return "\n".join(lines[i:])


def _refuse_unsupported(folder: Path, config: TaskToml) -> None:
    env = config.environment
    problems = []
    if config.steps:
        problems.append("it has [[steps]] (multi-step tasks are not run here)")
    if env.os.lower() != "linux":
        problems.append(f"its environment is {env.os} (only Linux containers run here)")
    if env.gpus:
        problems.append("it asks for GPUs")
    if "allowlist" in (env.network_mode, config.agent.network_mode, config.verifier.network_mode):
        problems.append("its network is an allowlist, which the Docker sandbox cannot enforce")
    if not (folder / "environment" / "Dockerfile").is_file():
        problems.append("it has no environment/Dockerfile (a prebuilt docker_image is never pulled here)")
    if not (folder / "tests" / "test.sh").is_file():
        problems.append("it has no tests/test.sh")
    if problems:
        raise HarnessError(f"Harbor task {folder} cannot run here: {'; '.join(problems)}.")
