"""HarnessPolicy: every knob that can differ between two runs, as one value.

A policy is written verbatim into `run.json`, so an A/B comparison can say exactly what differed; the
named presets, and policy files that extend one, are in core/presets.py.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.context_policy import ContextStep, TruncationPolicy
from core.mcp_settings import MAX_TOOLS, McpServer

CodeToolName = Literal["search_code", "find_symbol", "repo_map"]  # tools/code/tools.py's CODE_TOOLS


class _Knobs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CodeLimits(_Knobs):
    timeout_s: float = Field(
        120.0, gt=0, description="seconds a run_code program may run, its tool calls included, before it is stopped"
    )
    max_calls: int = Field(200, ge=1, description="tool calls one run_code program may make; the next one ends it")
    max_output_chars: int = Field(
        200_000,
        ge=1,
        description="characters a run_code program may print; past them it is stopped (the model sees head and "
        "tail of what it printed, as of any output)",
    )
    direct_only: list[str] = Field(
        default_factory=lambda: ["submit"],
        description="tools a run_code program may not call, offered to the model as direct calls only (a write to "
        "keep in sight; the answer that ends the run); tools that wait for approval are direct-only too",
    )


class DispatchPolicy(_Knobs):
    mode: Literal["calls", "code", "both"] = Field(
        "calls",
        description="how the model acts: calls: one tool call at a time; code: it writes run_code programs that "
        "call the tools as functions (direct-only tools stay direct calls); both: either",
    )
    code: CodeLimits = Field(CodeLimits(), description="limits of one run_code program")
    parallel: Literal["first_write_wins", "all", "one_call_only"] = Field(
        "first_write_wins",
        description="which tool calls of one reply run: first_write_wins runs the reads and the first "
        "write and rejects every later call (the world changed after that write); all runs every call in order; "
        "one_call_only runs the first call only",
    )
    tool_timeout_s: float = Field(60.0, gt=0, description="seconds a tool call may run before it is stopped")


class StopPolicy(_Knobs):
    max_steps: int = Field(50, ge=1, description="stop after this many model replies")
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="stop once prompt + completion tokens over the run, summaries included, reach this; none: no limit",
    )
    max_wall_s: float | None = Field(None, gt=0, description="stop after this many seconds of work; none: no limit")
    max_cost_usd: float | None = Field(
        None,
        gt=0,
        description="stop once the run's model calls (summaries and failed calls included) have cost this many "
        "US dollars at the model's price (agent/models/prices.toml or `--prices FILE`; with no price for the model the run "
        "does not start); the step that reaches it is the last, so a run overshoots by at most one step; "
        "none: no limit",
    )
    max_no_tool_replies: int = Field(
        3, ge=1, description="stop after this many consecutive replies without a tool call"
    )
    max_repeats: int = Field(
        3, ge=2, description="stop when the same calls give the same results this many times in a row"
    )


class ErrorPolicy(_Knobs):
    model_attempts: int = Field(
        5,
        ge=1,
        description="tries per model call when it fails transiently (rate limit, "
        "overload, network), with exponential backoff between them",
    )
    backoff_multiplier_s: float = Field(1.0, ge=0, description="the first backoff, in seconds; it doubles per retry")
    backoff_max_s: float = Field(30.0, ge=0, description="the longest backoff between two tries, in seconds")
    max_consecutive_failures: int = Field(
        5, ge=1, description="stop after this many steps in a row whose tool calls all failed"
    )


class ApprovalPolicy(_Knobs):
    approve: Literal["never", "writes", "always"] = Field(
        "never", description="which tool calls wait for a person (`harness approve`): none, write tools only, or all"
    )
    per_tool: dict[str, Literal["never", "always"]] = Field(
        default_factory=dict, description="tool name -> never or always, overriding `approve` for that tool"
    )
    elicitation: Literal["ask", "defaults", "decline"] = Field(
        "ask",
        description="an MCP server's question during a tool call (elicitation): ask stops the run awaiting a "
        "person's answer (`harness approve --answer`), as a write waits for approval; defaults accepts with "
        "the form's defaults; decline declines it",
    )


class CheckpointPolicy(_Knobs):
    snapshot_every: int = Field(10, ge=1, description="write snapshot.json every this many steps (and at every stop)")
    on_signal: Literal["abandon", "finish"] = Field(
        "abandon",
        description="what SIGINT (Ctrl-C) or SIGTERM does to the call in flight before the run stops as interrupted, "
        "with its snapshot and summary: abandon stops it at once (a command is killed as at a timeout, a model "
        "request is dropped), leaving it as a crash would for the resume to settle; finish lets it run to its end "
        "(at most the tool timeout or the model's read timeout) and journals its result; a second signal abandons",
    )
    interrupted_writes: Literal["ask", "rerun", "unknown"] = Field(
        "unknown",
        description="on resume, a write that was running when the process died and whose tool cannot check "
        "the world itself: ask stops for `harness approve`; rerun runs it again; unknown tells the model the outcome "
        "is unknown and to check before acting again",
    )
    fork_every: int | None = Field(
        None,
        ge=1,
        description="for runs meant to be forked: a Docker sandbox's workspace is saved as an image every this "
        "many steps and kept after the run ends, so `harness fork` starts from the nearest one instead of "
        "running every write again from the task's setup; none: no such checkpoints",
    )


class OverflowPolicy(_Knobs):
    on_overflow: Literal["compact", "truncate", "stop"] = Field(
        "compact",
        description="what a prompt too long for the model's window (counted before sending, or refused by the "
        "provider) triggers: compact folds old steps into the working memory at once and then, if that is not "
        "enough, truncates; truncate cuts the largest observations in the prompt; stop ends the run with "
        "context_overflow",
    )
    keep_recent_steps: int = Field(1, ge=0, description="steps an emergency fold keeps verbatim")
    summariser: Literal["model", "extractive"] = Field(
        "model",
        description="who writes an emergency fold's memory: model asks the run's summariser (the extractive one "
        "answers when its request would not fit the window either); extractive builds it by rules, at no cost",
    )
    observation_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="one observation may take at most this share of the window (less the reply's max_tokens): a "
        "longer one is cut when it is made, its full text kept in artifacts/",
    )


class ModelParams(_Knobs):
    temperature: float = Field(0.0, ge=0, description="sampling temperature; 0 is greedy")
    max_tokens: int = Field(1024, ge=1, description="the most tokens one reply may have")
    context_window: int | None = Field(
        None,
        ge=1,
        description="the model's context window in tokens (prompt and reply), overriding what the model's "
        "server says and the known windows (agent/models/windows.toml); none: those, else unknown and unchecked",
    )
    seed: int | None = Field(
        0,
        description="sampling seed, for providers that take one; each step's call is sent it mixed with the step "
        "number (step_params); none: unseeded",
    )
    tool_choice: Literal["auto", "required", "none"] = Field(
        "auto",
        description="required: every reply must call a tool (the local engine then constrains decoding to a "
        "schema-valid call, so even a tiny model never emits a broken one); auto: the model decides; none: no tools",
    )
    reply_schema: dict | None = Field(
        None,
        description="a JSON schema the reply's text must follow (the summariser sets the working memory's): the "
        "local engine constrains decoding to it, OpenAI-compatible servers get it as response_format; none: free text",
    )
    cache_breakpoints: list[Literal["tools", "system", "last_message"]] = Field(
        default_factory=list, description="Anthropic prompt caching: where cache_control breakpoints go (at most 4)"
    )
    cache_ttl: Literal["5m", "1h"] = Field("5m", description="Anthropic prompt caching: how long a cached prefix lives")
    thinking_budget: int | None = Field(
        None, ge=1024, description="Anthropic extended thinking budget, in tokens; none: off"
    )
    connect_timeout_s: float = Field(10.0, gt=0, description="seconds to open a connection to the model's server")
    read_timeout_s: float = Field(
        300.0,
        gt=0,
        description="seconds to wait for the model's reply (or its next bytes) before the call fails as transient",
    )
    sdk_retries: int = Field(
        0,
        ge=0,
        description="retries inside the provider SDK per attempt; 0 leaves every retry to errors.model_attempts",
    )


def step_params(params: ModelParams, step: int, *call: object) -> ModelParams:
    """`params` for a model call of step `step`, its seed mixed with the step. A seeded sampler draws the same random
    numbers for the same seed (the local engine one per token position), so a run sending one seed with every
    call would draw the same numbers at every step; mixed with the step, a run's calls draw apart, while the
    same step of a resumed run, of a replay and of every fork of the run draws as the run did. `call` tells the
    step's other model calls apart from its agent call and from each other (a summary and its attempt, an MCP
    server's sampling request), so a retried summary draws afresh rather than repeat the reply it replaces."""
    if params.seed is None:
        return params
    key = "/".join(map(str, (params.seed, step, *call)))
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return params.model_copy(update={"seed": int.from_bytes(digest, "big") >> 1})


class MemoryPolicy(_Knobs):
    tool: bool = Field(
        False,
        description="offer the `memory` tool (Anthropic's memory commands over files in /memories, kept by the "
        "harness outside the sandbox) and show the memory in every prompt; `--memory DIR` turns it on with a "
        "store that outlives the run",
    )
    max_file_bytes: int = Field(16000, ge=1, description="the most bytes one memory file may hold")
    max_total_bytes: int = Field(64000, ge=1, description="the memory's quota: the most bytes of all its files")
    superseded_shown: int = Field(
        8, ge=0, description="superseded versions the prompt lists, newest first, one line each (all stay kept)"
    )


class HarnessPolicy(_Knobs):
    name: str = Field("default", description="the policy's name, as run.json and reports show it")
    system_prompt: str | None = Field(None, description="the system prompt; none: the task's, else the built-in one")
    model: ModelParams = Field(ModelParams(), description="how the model is asked")
    dispatch: DispatchPolicy = Field(DispatchPolicy(), description="how a reply's tool calls run")
    stop: StopPolicy = Field(StopPolicy(), description="when the run stops")
    errors: ErrorPolicy = Field(ErrorPolicy(), description="retries of failing model calls, and failing steps")
    approval: ApprovalPolicy = Field(ApprovalPolicy(), description="which tool calls wait for a person")
    checkpoint: CheckpointPolicy = Field(CheckpointPolicy(), description="snapshots, and interrupted writes on resume")
    overflow: OverflowPolicy = Field(
        OverflowPolicy(), description="how a prompt that does not fit the model's context window is recovered"
    )
    truncation: TruncationPolicy = Field(
        TruncationPolicy(), description="how much of a long tool output the model sees"
    )
    context: list[ContextStep] = Field(
        default_factory=list,
        description="context steps applied in order to the history "
        "to make each prompt; empty: every message is resent verbatim",
    )
    code_tools: list[CodeToolName] = Field(
        default_factory=list,
        description="code tools offered beside the tool set (tools/code): search_code ranks files and functions "
        "for a query, find_symbol gives a name's definitions and references, repo_map a map of the repository",
    )
    memory: MemoryPolicy = Field(MemoryPolicy(), description="the notes the agent keeps itself (the memory tool)")
    mcp: list[McpServer] = Field(default_factory=list, description="MCP servers whose tools join the built-in ones")
    mcp_resources: list[str] = Field(
        default_factory=list,
        description="MCP resources placed before the task in the opening prompt, as SERVER:URI (a URI may be a "
        "template filled from the task's id and vars); one that changes during the run is read again and its "
        "new content appended at the next step",
    )
    mcp_read_resource: bool = Field(
        False, description="offer the model a read_resource tool, to read MCP resources it chooses itself"
    )
    mcp_max_tools: int = Field(
        MAX_TOOLS,
        ge=0,
        description="MCP tools offered over all servers, in the order the servers are listed; "
        "the rest are left out with a notice",
    )
    mcp_disclose_over_tokens: int | None = Field(
        8000,
        ge=0,
        description="when the tools offered cost more than this many tokens in every request (their schemas, as "
        "the model's tokenizer counts them) and the context has no disclose_tools step, the MCP tools are sent as "
        "one-line summaries with describe_tool for the rest, as under disclose_tools (built-in tools stay whole); "
        "none: never by itself",
    )
