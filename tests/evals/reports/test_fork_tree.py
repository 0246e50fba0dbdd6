"""A fork's report shows its tree: the parent and branch point, what changed there, its inherited steps apart
from its own; the parent's report lists the forks made of it where `harness fork` put them."""

from __future__ import annotations

from agent.fork import family, fork
from agent.models.pricing import load_prices
from agent.session import RunSpec, start
from core.policy import HarnessPolicy, StopPolicy
from core.presets import PRESETS
from evals.reports.html import render_run
from evals.reports.load import load_run
from evals.reports.text import run_markdown
from tests.agent import forking


def test_reports_show_a_fork_tree_with_the_inherited_steps_apart(tmp_path):
    policy = HarnessPolicy(name="plain", stop=StopPolicy(max_steps=20))
    summary, parent = start(RunSpec(forking.TASK, forking.model(8), policy, tmp_path, run_id="parent"))
    assert summary.steps == 8
    made = fork(parent, 4, policy=PRESETS["lean"], model=forking.model(8))  # beside its parent, by default
    family(parent, 6, [PRESETS["append_only"]], [0, 1], tmp_path / "parent-forks-at-6", model=forking.model(8))
    prices = load_prices()

    child = load_run(made.run_dir, prices)
    assert child.forks is not None
    text = run_markdown(child)
    assert "**fork of** parent after its step 4" in text and "policy plain -> lean" in text
    own_tokens = sum(s.usage.prompt_tokens for s in child.steps if s.n > 4)
    assert "steps 1–4 inherited: 4 steps" in text and f"its own steps: 4, {own_tokens:,} prompt tokens" in text
    assert "world at the branch: the task's files and setup, then 4 writes run again and checked" in text
    assert "forks of this run" not in text
    page = render_run(child, tmp_path / "fork-report.html").read_text()
    assert "Fork tree" in page and page.count(">inherited</span>") == 4  # the timeline marks steps 1-4, not 5-8
    assert page.index('id="step-4"') < page.rindex(">inherited</span>") < page.index('id="step-5"')

    tree = load_run(parent, prices).forks
    assert tree is not None and tree.origin is None
    assert [(c.at_step, c.policy) for c in tree.children] == [(4, "lean"), (6, "append_only"), (6, "append_only")]
    page = render_run(load_run(parent, prices), tmp_path / "report.html").read_text()
    assert (
        "Fork tree" in page
        and "forks of this run 3:" in page
        and ">inherited</span>" not in page
        and f"{made.run_dir.name} after step 4" in page
    )
