"""What a study runs: its grid of tasks × policies × seeds, at each point of replicas × router ×
runs in flight × cache size."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from agent.models.pricing import load_prices
from agent.models.spec import parse_model
from agent.run.task import Task, load_task
from agent.session import SandboxSpec
from core.errors import HarnessError
from core.policy import HarnessPolicy
from core.presets import MEMORY_ON, PRESETS, load_policy, memory_on
from evals.chess.opponents import check_spec

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
LOOP_TASKS = HERE.parent / "loops" / "tasks"  # the loop-shaped suite (evals/loops), bundled too
POLICIES = HERE / "policies"
CHESS = "chess"
CAPTURES = "captures"  # the loop-shaped suite's chess task (evals.loops.captures)
SUITES = {"loops": ["rename", "todos", "slowest", CAPTURES]}  # a suite's name stands for its tasks
DEFAULT_ROUTER = "prefix"  # as `harness serve --router`'s


@dataclass(frozen=True)
class StudySpec:
    model: str  # a model string: `local` (in-process engine), `openai-compatible:http://...#name`, ...
    tasks: list[str]  # `chess`, a bundled task's name (evals/study/tasks), or a task file
    policies: list[str]  # presets, bundled study policies (evals/study/policies) or policy files
    seeds: list[int] = field(default_factory=lambda: [0])
    concurrency: list[int] = field(default_factory=lambda: [4])  # runs in flight at once; one point each
    kv_cache_mb: list[int | None] = field(default_factory=lambda: [None])  # in-process engine only; None: its default
    max_steps: int | None = None  # over every policy's own cap
    max_tokens: int | None = None  # tokens per reply, over every policy's own cap
    sandbox: str = "docker"  # where the coding tasks' tools run
    opponent: str = "stockfish:skill=0"
    max_plies: int = 8  # chess games are drawn after this many plies
    max_replies: int = 10  # model replies per chess turn before the game is forfeited
    # Engines of the in-process model behind one URL (Ray Serve), one point each; 1: the one engine in-process.
    replicas: list[int] = field(default_factory=lambda: [1])
    routers: list[str] = field(default_factory=lambda: [DEFAULT_ROUTER])  # each, at every replicas count above 1
    router_imbalance: int | None = None  # the prefix and session routers' fallback threshold; None: theirs (4)
    device: str = "cpu"  # the in-process engines': cpu, or cuda (one GPU per replica)
    max_batched_tokens: int | None = None  # the in-process engines' tokens per step; None: the engine's (512)
    prices: str | None = None  # the price table runs are priced from; None: agent/models/prices.toml

    def __post_init__(self) -> None:
        for name, values in (
            ("task", self.tasks),
            ("policy", self.policies),
            ("seed", self.seeds),
            ("concurrency", self.concurrency),
            ("cache size", self.kv_cache_mb),
            ("replicas count", self.replicas),
            ("router", self.routers),
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
        self._check_replicas(local)
        if self.prices is not None:
            load_prices(self.prices)  # a table that cannot be read is said before anything runs
        check_spec(self.opponent)
        SandboxSpec.parse(self.sandbox)

    def _check_replicas(self, local: bool) -> None:
        if any(n < 1 for n in self.replicas) or len(set(self.replicas)) != len(self.replicas):
            raise HarnessError(f"Replicas counts must be 1 or more, each once; got {self.replicas}.")
        if len(set(self.routers)) != len(self.routers):
            raise HarnessError("Name each router once: runs are paired by task and seed across routers.")
        engines = (self.replicas, self.routers, self.router_imbalance, self.device, self.max_batched_tokens)
        if not local and engines != ([1], [DEFAULT_ROUTER], None, "cpu", None):
            raise HarnessError(
                "--replicas, --router, --router-imbalance, --device and --max-batched-tokens set up the in-process "
                f"model's engines; {self.model} is served elsewhere and routes its requests itself "
                "(e.g. `harness serve --replicas N --router R`). Leave them out."
            )
        if self.device.split(":")[0] not in ("cpu", "cuda"):
            raise HarnessError(f"--device must be cpu or cuda, got {self.device!r}.")
        if max(self.replicas) == 1:
            return
        if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.serve") is None:
            raise HarnessError(
                "Replicas run on Ray Serve, which is not installed: pip install 'harness[serve-replicas]', "
                "or leave --replicas at 1."
            )
        from engine.server.forward import ROUTER_NAMES

        unknown = [r for r in self.routers if r not in ROUTER_NAMES]
        if unknown:
            raise HarnessError(f"Unknown router {unknown[0]!r}: choose from {', '.join(ROUTER_NAMES)}.")


@dataclass(frozen=True)
class Setting:
    """One point of the grid: the engines and the load the policies run under."""

    replicas: int
    router: str | None  # None: one engine, no router
    concurrency: int
    kv_cache_mb: int | None

    @property
    def label(self) -> str:
        engines = f"r{self.replicas}-{self.router}-" if self.router else ""
        return f"{engines}c{self.concurrency}-kv{self.kv_cache_mb or 'default'}"


def settings(spec: StudySpec) -> list[Setting]:
    """Every point, in order: replicas, router (one engine has none), runs in flight, cache size."""
    return [
        Setting(n, router, concurrency, kv)
        for n in spec.replicas
        for router in (spec.routers if n > 1 else [None])
        for concurrency in spec.concurrency
        for kv in spec.kv_cache_mb
    ]


def study_policy(name: str) -> HarnessPolicy:
    """A preset, a bundled study policy (by its file's stem), or a policy file; `+memory` after any of them:
    the same with the agent's memory tool on."""
    if name.endswith(MEMORY_ON):
        return memory_on(study_policy(name.removesuffix(MEMORY_ON)))
    if name not in PRESETS and (POLICIES / f"{name}.toml").exists():
        return load_policy(str(POLICIES / f"{name}.toml"))
    return load_policy(name)


def study_task(name: str) -> Task | None:
    """The coding task a name stands for; None for a chess task (a game, or the captures to score)."""
    if name in (CHESS, CAPTURES):
        return None
    for folder in (TASKS, LOOP_TASKS):
        if (folder / f"{name}.yaml").exists():
            return load_task(str(folder / f"{name}.yaml"))
    if Path(name).suffix in (".yaml", ".yml", ".json") and Path(name).exists():
        return load_task(name)
    bundled = ", ".join(sorted(p.stem for folder in (TASKS, LOOP_TASKS) for p in folder.glob("*.yaml")))
    raise HarnessError(
        f"Unknown study task {name!r}: name `chess`, `{CAPTURES}`, a bundled task ({bundled}), a suite "
        f"({', '.join(SUITES)}) or a task file (.yaml/.json)."
    )


def expand_tasks(names: list[str]) -> list[str]:
    """The tasks named, each suite replaced by its tasks."""
    return [task for name in names for task in SUITES.get(name, [name])]


def bundled_policies() -> list[str]:
    return sorted(p.stem for p in POLICIES.glob("*.toml"))
