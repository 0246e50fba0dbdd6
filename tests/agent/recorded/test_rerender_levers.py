"""`harness rerender` of runs that used the code search tools, the opening repository map or code mode, under
another preset: each policy's prompts carry the tools it would have offered and the opening it would have
made. A code_search run re-rendered under append_only counts exactly what the same run made under append_only
sent; a code-mode run's tools under a calls-mode preset are the ones it would have offered directly."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agent.models.pricing import load_prices
from agent.models.scripted import ScriptedModel
from agent.recorded.counterfactual import counterfactual
from agent.run.task import Task
from agent.session import RunSpec, start
from cli.main import app
from core.policy import DispatchPolicy, HarnessPolicy, StopPolicy
from core.presets import PRESETS, memory_on
from tests.agent.helpers import call
from tests.tools.code.repos import SHOP

TASK = Task(id="shop", prompt="Cart.apply_discount applies the discount rate wrongly.", files=SHOP)
READ = [call("read_file", path="shop/pricing.py"), call("submit", answer="done")]
CODE = HarnessPolicy(name="code", dispatch=DispatchPolicy(mode="code"), stop=StopPolicy(max_steps=20))


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def run(tmp_path, policy: HarnessPolicy, replies) -> object:
    summary, run_dir = start(RunSpec(TASK, ScriptedModel(replies), policy, tmp_path / "runs", run_id=policy.name))
    assert summary.stop_reason == "submitted"
    return run_dir


def figures(run_dir, *names: str):
    c = counterfactual(run_dir, [PRESETS[n] for n in names], load_prices())
    return c, {
        f.policy: (f.prompt_tokens, f.tool_schema_tokens, [s.prompt_tokens for s in f.steps]) for f in c.policies
    }


def test_a_code_search_run_under_append_only_is_the_append_only_run_and_back(tmp_path):
    searched = run(tmp_path, PRESETS["code_search"], READ)
    plain = run(tmp_path, PRESETS["append_only"], READ)
    _, under = figures(searched, "append_only", "code_search")
    _, own = figures(plain, "append_only", "code_search")
    # without the map in its opening and the three code tools among its tools: what the append_only run sent
    assert under["append_only"] == own["append_only (recorded)"]
    assert under["code_search"] == under["code_search (recorded)"]
    # the other way the tools come back, the map cannot (a re-render has no files to map), and the note says so
    c, _ = figures(plain, "code_search")
    assert own["code_search"][1] == under["code_search (recorded)"][1] > own["append_only"][1]
    assert own["code_search"][0] < under["code_search (recorded)"][0]
    assert any("under code_search: the run opened without a repository map" in n for n in c.notes)
    shown = CliRunner().invoke(app, ["rerender", str(plain), "--policy", "code_search"])
    assert shown.exit_code == 0 and "opened without a repository map" in " ".join(shown.output.split())


def test_a_code_mode_run_under_a_calls_preset_offers_its_tools_directly(tmp_path):
    program = call("run_code", code="print(read_file(path='shop/pricing.py'))")
    coded = run(tmp_path, CODE, [program, READ[-1]])
    plain = run(tmp_path, PRESETS["append_only"], READ)
    _, under = figures(coded, "append_only", "code_search")
    _, own = figures(plain, "append_only", "code_search")
    assert under["append_only"][1] == own["append_only (recorded)"][1] != under["code (recorded)"][1]
    assert under["code_search"][1] == own["code_search"][1]
    # under code mode again, the run's own run_code (its program tools named in it) is what it offered
    again = counterfactual(coded, [CODE], load_prices())
    assert [f.tool_schema_tokens for f in again.policies] == [under["code (recorded)"][1]] * 2


def test_a_code_mode_run_with_memory_under_presets_with_and_without_the_memory(tmp_path):
    note = call("memory", command="create", path="/memories/a.md", file_text="pricing: shop/pricing.py\n")
    program = call("run_code", code="print(read_file(path='shop/pricing.py'))")
    coded = run(tmp_path, memory_on(CODE), [note, program, READ[-1]])
    plain = run(tmp_path, PRESETS["append_only"], READ)
    remembered = run(tmp_path, memory_on(PRESETS["append_only"]), READ)
    c = counterfactual(coded, [PRESETS["append_only"], memory_on(PRESETS["append_only"])], load_prices())
    tools = {f.policy: f.tool_schema_tokens for f in c.policies}
    _, own = figures(plain, "append_only")
    _, kept = figures(remembered, "append_only")
    assert tools["append_only"] == own["append_only (recorded)"][1]  # neither the memory tool nor run_code
    assert tools["append_only+memory"] == kept["append_only+memory (recorded)"][1] > tools["append_only"]
