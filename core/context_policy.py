"""What a run sends the model: the context steps and the truncation of tool output, as values.

Each step is a pydantic model with a `kind`, so a run's context handling can be printed, diffed
and compared. `HarnessPolicy.context` holds a list of them, applied in order (memory.render).
Only `Compact` changes how many messages there are, and it works on history indices, so put it
first or after steps that only rewrite text (all the others).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator

from core.errors import HarnessError

SHARE = re.compile(r"([1-9][0-9]*)%")  # "80%": a whole percentage, no sign, no leading zero


def _budget(least: int) -> PlainValidator:
    """A token budget: a whole number of tokens (at least `least`), or "N%" of the model's context window."""

    def check(value: object) -> int | str:
        if isinstance(value, int) and not isinstance(value, bool) and value >= least:
            return value
        if isinstance(value, str) and (m := SHARE.fullmatch(value)) and int(m[1]) <= 100:
            return value
        raise ValueError(
            f"a token budget is a whole number of tokens, at least {least} (e.g. 12000), or a share of the "
            'model\'s context window written "N%" with N a whole number from 1 to 100 (e.g. "80%")'
        )

    return PlainValidator(check, json_schema_input_type=int | str)


def tokens(value: int | str, window: int | None) -> int:
    """A token budget in tokens: a number as it is; "N%" as N% of `window` rounded down, but at least 1
    token, so a share of a small window never turns into 0 (no budget at all)."""
    if isinstance(value, int):
        return value
    if window is None:
        raise HarnessError(_needs_window(f'"{value}"'))
    return max(1, window * int(value[:-1]) // 100)


WINDOW_SHARES = ("trigger_tokens", "keep_first_tokens", "max_memory_tokens")  # the Compact fields that take "N%"


def check_window(steps: Sequence[ContextStep], window: int | None) -> None:
    """Before a run (or a re-render) starts: a budget given as a share of the window needs a known window."""
    if window is not None:
        return
    for i, step in enumerate(steps):
        for name in WINDOW_SHARES if isinstance(step, Compact) else ():
            value = getattr(step, name)
            if isinstance(value, str):
                raise HarnessError(_needs_window(f'context[{i}].{name} = "{value}"'))


def _needs_window(what: str) -> str:
    return (
        f"The policy's compact step sets {what}, a share of the model's context window, and this model's window "
        "is not known. Set `[model] context_window` (tokens) in the policy, use a model whose window is known "
        "(agent/models/windows.toml), or give the budget in tokens."
    )


class _Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StripReasoning(_Step):
    """Drop hidden reasoning from past turns.

    `none` drops it everywhere, `last_turn` keeps the newest assistant turn's, `all`
    keeps everything. Whatever the value, a provider's signed blocks
    (`Reasoning.payload`) of an unfinished tool-use turn stay: the provider
    rejects the request without them.
    """

    kind: Literal["strip_reasoning"] = Field("strip_reasoning", description="drop hidden reasoning from past turns")
    keep: Literal["none", "last_turn", "all"] = Field(
        "last_turn",
        description="none drops all reasoning text, last_turn keeps the newest turn's, all keeps everything "
        "(signed blocks of an unfinished tool-use turn always stay)",
    )


class MaskObservations(_Step):
    """Keep the newest `keep_last` tool outputs verbatim; older ones become a one-line placeholder
    that says which tool ran, how much it printed and how it ended."""

    kind: Literal["mask_observations"] = Field(
        "mask_observations", description="replace old tool outputs by a placeholder"
    )
    keep_last: int = Field(5, ge=0, description="how many of the newest tool outputs stay verbatim")
    every: int = Field(
        1,
        ge=1,
        description="move the mask boundary in jumps of this many outputs: with 1 every step "
        "rewrites one old output (the cache breaks there each step); with K the prompt is append-only "
        "between jumps, at the price of up to K-1 extra verbatim outputs",
    )


class Compact(_Step):
    """Fold old steps into a structured working memory once the prompt grows past a threshold.

    `layout="rewrite"` (naive): the memory replaces everything between the task and
    the recent steps, and each fold rewrites it, so the cached prefix ends at the task.
    `layout="append"` (cache-aware): each fold appends the memory's changes after the
    earlier ones, so everything before the newest fold stays byte-identical; the notes
    are consolidated into one rewrite only when they outgrow `max_memory_tokens`.
    `summariser_prompt="fork"` asks for the summary by appending one instruction to the
    agent's own prompt (a cache hit on all of it); `fresh` sends a new prompt with a
    readable transcript of the folded steps.
    """

    kind: Literal["compact"] = Field("compact", description="fold old steps into a working memory")
    trigger_tokens: Annotated[int | str, _budget(1)] = Field(
        16000,
        description="fold when the next prompt, tool schemas included, reaches this many tokens, or this share "
        'of the model\'s context window ("80%")',
    )
    every_steps: int | None = Field(
        None, ge=1, description="also fold once this many steps passed since the last fold; none: by tokens only"
    )
    keep_recent_steps: int = Field(4, ge=0, description="steps kept verbatim after a fold")
    keep_first_tokens: Annotated[int | str, _budget(0)] = Field(
        0,
        description="the earliest steps after the task, as many whole steps as fit in this many tokens (or this "
        'share of the context window, "40%"), stay verbatim ahead of the memory notes and are never folded: a '
        "longer prefix that every prompt shares",
    )
    layout: Literal["rewrite", "append"] = Field(
        "append",
        description="append: each fold appends the memory's changes, so the prefix before it never moves; "
        "rewrite: each fold rewrites the whole memory after the task",
    )
    summariser_prompt: Literal["fresh", "fork"] = Field(
        "fork",
        description="fork: the agent's own prompt plus one instruction (a cache hit on all of it); fresh: a new "
        "prompt with a readable transcript of the folded steps",
    )
    summary_max_tokens: int = Field(1024, ge=16, description="the summariser's first token cap; doubled on a cut-off")
    max_memory_tokens: Annotated[int | str, _budget(1)] = Field(
        4000, description='append layout: consolidate notes past this many tokens (or this share of the window, "5%")'
    )


class DiscloseTools(_Step):
    """Send each tool's one-line summary instead of its full schema; `describe_tool` gives the rest
    on demand (see memory/disclosure.py). Changes the tool list, not the messages."""

    kind: Literal["disclose_tools"] = Field("disclose_tools", description="send tool summaries, full schemas on demand")
    always_full: list[str] = Field(default_factory=list, description="tools whose full schema is always sent")


class RepoMap(_Step):
    """Put a map of the repository after the task in the opening prompt: the files the task is about and
    those they lean on, each with its classes and functions (tools.code.repomap). It is made once, when
    the run starts, and kept in the run's task, so every prompt of the run (a resume's and a replay's too)
    starts with the same bytes. Changes the opening, not the history."""

    kind: Literal["repo_map"] = Field("repo_map", description="a repository map in the opening prompt")
    budget: int = Field(1024, ge=64, le=16384, description="the map's size in tokens (about 4 characters each)")
    focus: Literal["task", "none"] = Field(
        "task",
        description="task: centre the map on the files the task's text is about; none: the repository's most "
        "central files",
    )


ContextStep = Annotated[
    StripReasoning | MaskObservations | Compact | DiscloseTools | RepoMap, Field(discriminator="kind")
]


class Limits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    head_chars: int = Field(4900, ge=0, description="characters kept from the start of a long tool output")
    tail_chars: int = Field(4900, ge=0, description="characters kept from its end; the middle is replaced by a notice")


class TruncationPolicy(Limits):
    per_tool: dict[str, Limits] = Field(
        default_factory=dict, description="tool name -> its own head_chars and tail_chars"
    )

    def for_tool(self, name: str) -> Limits:
        return self.per_tool.get(name, self)
