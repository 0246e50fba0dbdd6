"""What a study runs: its grid of tasks × policies × seeds, at each point of concurrency and cache size."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.models.spec import parse_model
from agent.session import SandboxSpec
from agent.task import Task, load_task
from core.errors import HarnessError
from core.policy import PRESETS, HarnessPolicy, load_policy
from evals.chess.opponents import check_spec

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
POLICIES = HERE / "policies"
CHESS = "chess"


@dataclass(frozen=True)
class StudySpec:
    model: str  # a model string: `local` (in-process engine), `openai-compatible:http://...#name`, ...
    tasks: list[str]  # `chess`, a bundled task's name (evals/study/tasks), or a task file
    policies: list[str]  # presets, bundled study policies (evals/study/policies) or policy files
    seeds: list[int] = field(default_factory=lambda: [0])
    concurrency: list[int] = field(default_factory=lambda: [4])  # runs in flight at once; one point each
    kv_cache_mb: list[int | None] = field(default_factory=lambda: [None])  # in-process engine only; None: its default
    max_steps: int | None = None  # over every policy's own cap
    sandbox: str = "docker"  # where the coding tasks' tools run
    opponent: str = "stockfish:skill=0"
    max_plies: int = 8  # chess games are drawn after this many plies

    def __post_init__(self) -> None:
        for name, values in (
            ("task", self.tasks),
            ("policy", self.policies),
            ("seed", self.seeds),
            ("concurrency", self.concurrency),
            ("cache size", self.kv_cache_mb),
        ):
            if not values:
                raise HarnessError(f"A study needs at least one {name}.")
        if len(set(self.policies)) != len(self.policies) or len(set(self.tasks)) != len(self.tasks):
            raise HarnessError("Name each task and each policy once: runs are paired by task and seed across policies.")
        if any(c < 1 for c in self.concurrency):
            raise HarnessError("Runs in flight must be 1 or more.")
        if any(mb is not None and mb < 1 for mb in self.kv_cache_mb):
            raise HarnessError("A KV cache size must be 1 MiB or more.")
        local = parse_model(self.model).is_local
        if not local and self.kv_cache_mb != [None]:
            raise HarnessError(
                f"--kv-cache-mb sizes the in-process engine's cache; {self.model} is served elsewhere, "
                "so its cache is the server's own (e.g. `harness serve --kv-cache-mb`). Leave it out."
            )
        check_spec(self.opponent)
        SandboxSpec.parse(self.sandbox)


def study_policy(name: str) -> HarnessPolicy:
    """A preset, a bundled study policy (by its file's stem), or a policy file."""
    if name not in PRESETS and (POLICIES / f"{name}.toml").exists():
        return load_policy(str(POLICIES / f"{name}.toml"))
    return load_policy(name)


def study_task(name: str) -> Task | None:
    """The coding task a name stands for; None for a chess game."""
    if name == CHESS:
        return None
    if (TASKS / f"{name}.yaml").exists():
        return load_task(str(TASKS / f"{name}.yaml"))
    if Path(name).suffix in (".yaml", ".yml", ".json") and Path(name).exists():
        return load_task(name)
    bundled = ", ".join(sorted(p.stem for p in TASKS.glob("*.yaml")))
    raise HarnessError(
        f"Unknown study task {name!r}: name `chess`, a bundled task ({bundled}) or a task file (.yaml/.json)."
    )


def bundled_policies() -> list[str]:
    return sorted(p.stem for p in POLICIES.glob("*.toml"))
