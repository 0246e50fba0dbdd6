"""The command-line options of the agent's memory kept across runs (`harness run`, `swe`, `tasks`)."""

from __future__ import annotations

import typer

from agent.memory_dir import PER_REPOSITORY, MemoryDir, parse

MEMORY = typer.Option(
    None,
    "--memory",
    help="Keep the agent's memory across runs in DIR (turns the memory tool on): DIR or DIR:rw reads it at "
    "the start and saves what each run wrote when it stops; DIR:ro only reads it.",
    metavar="DIR[:ro|:rw]",
)
MEMORY_KEY = typer.Option(
    "default", "--memory-key", help="The store under DIR the run uses: runs that share a key share a memory."
)
BATCH_MEMORY_KEY = typer.Option(
    PER_REPOSITORY,
    "--memory-key",
    help=f"The store under DIR each instance uses; {PER_REPOSITORY} (the default): its repository's (a task's: "
    "'default'). A batch refuses a store that holds entries written while working on one of its instances.",
)


def memory_dir(memory: str | None, key: str) -> MemoryDir | None:
    return parse(memory, key) if memory is not None else None
