"""A re-render of a run that kept the agent's memory shows its prompts with the memory, as they were sent,
and without it, as a policy without the memory tool would have had them; compacting again, each fold keeps
the memory as of its step."""

from __future__ import annotations

from agent.journal.store import read_events, read_run_info
from agent.journal.tools import recorded_tools
from agent.memory_store import recorded_memory
from agent.recorded.rerender import rerender
from agent.tokens import counter_for
from core.events import ModelReplied
from core.presets import PRESETS
from evals.probes.knowledge import CONFIG_EDITED
from evals.probes.run import forced, run_probe
from memory.notes import AS_OF
from tools.base import recorded_tool


def memory_notes(prompt) -> list[str]:
    return [m.text for m in prompt if m.role == "user" and m.text.startswith("[Memory")]


def test_the_prompts_with_and_without_the_memory(tmp_path):
    run_dir = run_probe(CONFIG_EDITED, PRESETS["compact_cache_aware"], memory=True, out=tmp_path).run_dir
    events, info = read_events(run_dir), read_run_info(run_dir)
    counter, tools = counter_for(info.model), [recorded_tool(r) for r in recorded_tools(run_dir) or []]
    context = forced(PRESETS["compact_cache_aware"], True).context

    sent = rerender(events, context, counter, tools, keep_prompts=True, recorded_folds=True)
    recorded = [e.counted_tokens for e in events if isinstance(e, ModelReplied)]
    assert [s.prompt_tokens for s in sent.steps] == recorded  # as the run sent them, memory notes and all
    assert any(memory_notes(r.messages) for r in sent.requests)

    without = rerender(events, context, counter, tools, keep_prompts=True, recorded_folds=True, show_memory=False)
    assert not any(memory_notes(r.messages) for r in without.requests)
    assert without.total < sent.total

    again = rerender(
        events, context, counter, tools, keep_prompts=True, memory=recorded_memory(run_dir, info.memory, events, 8)
    )
    notes = [memory_notes(r.messages) for r in again.requests if r.kind == "agent"]
    assert any(n and n[-1].startswith(AS_OF) and "timeout = 120" in n[-1] for n in notes)
