"""A run's place in a fork tree (`harness fork`): the parent and the step it branched after, what changed there,
its inherited steps apart from its own, and the forks made of it that lie where `harness fork` puts them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.journal.fold import Step
from agent.journal.store import ForkOrigin, RunInfo, read_run_info
from core.errors import HarnessError
from core.events import Event, Forked

# Where `harness fork` puts a run's forks by default: beside it (one fork), or RUN-forks-at-N/POLICY/ (a family).
CHILDREN_AT = ("*/run.json", "*-forks-at-*/*/*/run.json")


@dataclass(frozen=True)
class Child:
    run_id: str
    dir: Path
    at_step: int
    policy: str
    changes: tuple[str, ...]


@dataclass(frozen=True)
class Part:
    """Steps of a fork, inherited or its own, and what their prompts cost a cache: the tokens the provider
    (or the embedded engine) reported, and the ideal prefix reuse by the harness's count."""

    steps: int
    prompt: int
    cached: int
    counted: int = 0
    reused: int = 0

    def figures(self) -> str:
        hits = f" ({self.cached / self.prompt:.0%} of them)" if self.prompt else ""
        ideal = f"; ideal prefix reuse {self.reused / self.counted:.0%}" if self.counted else ""
        return f"{self.prompt:,} prompt tokens, {self.cached:,} cached{hits}{ideal}"


@dataclass(frozen=True)
class ForkTree:
    origin: ForkOrigin | None  # None: a run of its own, with forks made of it
    world: str  # how the fork's world at the branch was rebuilt; "" while the branch is not journaled
    changes: tuple[str, ...]  # what changed at the branch: policy, model, seed, the context folded again
    inherited: Part  # the inherited steps: the parent's figures, as its process measured them
    own: Part  # the run's own steps after the branch
    children: tuple[Child, ...]


def children_of(run_dir: Path) -> list[Child]:
    """The forks of the run at `run_dir` found where `harness fork` puts them, by branch step then run id."""
    here = run_dir.resolve()
    found = []
    for pattern in CHILDREN_AT:
        for path in here.parent.glob(pattern):
            try:
                info = read_run_info(path.parent)
            except HarnessError:  # a folder that only looks like a run: not a child to show
                continue
            if info.fork is not None and Path(info.fork.parent_dir).resolve() == here:
                name = str(info.policy.get("name") or "—")
                found.append(Child(info.run_id, path.parent, info.fork.at_step, name, tuple(info.fork.changes)))
    return sorted(found, key=lambda c: (c.at_step, c.run_id))


def fork_tree(run_dir: Path, info: RunInfo, events: list[Event], steps: list[Step]) -> ForkTree | None:
    """The run's fork tree; None for a run that is no fork and has no forks beside it."""
    children = tuple(children_of(run_dir))
    if info.fork is None and not children:
        return None
    at = info.fork.at_step if info.fork is not None else 0
    # The last: a fork of a fork inherits its parent's branch too.
    branch = next((e for e in reversed(events) if isinstance(e, Forked) and e.step == at), None)

    def part(chosen: list[Step]) -> Part:
        replied = [s.replied for s in chosen if s.replied is not None]
        return Part(
            len(chosen),
            sum(s.usage.prompt_tokens for s in chosen),
            sum(s.usage.cached_tokens for s in chosen),
            sum(r.counted_tokens or 0 for r in replied),
            sum(r.prefix_reused or 0 for r in replied),
        )

    return ForkTree(
        origin=info.fork,
        world=branch.world if branch is not None else "",
        changes=tuple(branch.notes if branch is not None else info.fork.changes if info.fork is not None else ()),
        inherited=part([s for s in steps if s.n <= at]),
        own=part([s for s in steps if s.n > at]),
        children=children,
    )


def fork_lines(tree: ForkTree) -> list[str]:
    """The tree as markdown lines: parent and branch point, inherited and own steps, then each child."""
    lines = []
    if tree.origin is not None:
        o = tree.origin
        inherited, own = tree.inherited, tree.own
        lines += [
            f"- **fork of** {o.parent} after its step {o.at_step} ({o.parent_dir})"
            + (f" · changed at the branch: {'; '.join(tree.changes)}" if tree.changes else ""),
            f"  - steps 1–{o.at_step} inherited: {inherited.steps} steps, {inherited.figures()} (the parent's, "
            "as its process measured them)"
            + (f"; world at the branch: {tree.world}" if tree.world else "; the branch is not built yet"),
            f"  - its own steps: {own.steps}, {own.figures()} (its prefix reuse begins at the branch)",
        ]
    if tree.children:
        lines.append(f"- **forks of this run** {len(tree.children)}:")
        lines += [
            f"  - {c.run_id} after step {c.at_step} · policy {c.policy}"
            + (f" · {'; '.join(c.changes)}" if c.changes else "")
            for c in tree.children
        ]
    return lines
