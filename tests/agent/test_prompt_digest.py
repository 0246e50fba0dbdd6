"""The per-run prompt digester hashes only new messages, and always gives the digest of the whole prompt."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.prompt_digest import PromptDigest, prompt_digest
from core.types import Message
from tools.builtin import standard_tools

POOL = [Message(role="user", text=f"m{i}") for i in range(6)]
TOOLS = list(standard_tools())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=8), min_size=1, max_size=6), st.data())
def test_an_incremental_digest_equals_the_digest_of_the_whole_prompt(prompts, data):
    digest = PromptDigest()
    history: list[Message] = []
    for picks in prompts:
        keep = data.draw(st.integers(0, len(history)))  # the loop appends, or a policy rewrites from some point
        history = history[:keep] + [POOL[i] for i in picks]
        tools = TOOLS[: data.draw(st.integers(0, len(TOOLS)))]
        assert digest(history, tools) == prompt_digest(history, tools)


def test_the_digest_changes_with_any_message_or_tool():
    base = prompt_digest(POOL[:3], TOOLS)
    assert prompt_digest(POOL[:3], TOOLS) == base
    assert prompt_digest([POOL[0], POOL[2], POOL[1]], TOOLS) != base
    assert prompt_digest([*POOL[:2], Message(role="user", text="m2 ")], TOOLS) != base
    assert prompt_digest(POOL[:3], TOOLS[1:]) != base
