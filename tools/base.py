"""The Tool contract, a registry, and schema export in OpenAI and Anthropic formats."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from core.types import Message, ModelReply
from sandboxes.base import Sandbox


class Effect(str, Enum):
    READ = "read"  # observes the world; safe to re-run
    WRITE = "write"  # changes the world; journaled as an intent before it runs
    # Changes only what the harness keeps for the agent (its memory), not the world the other calls act on:
    # journaled as an intent like a write, but a later call of the same reply still runs.
    NOTE = "note"


class FreeArgs(BaseModel):
    """Argument model for tools whose schema comes from outside (MCP): any object passes here,
    and the tool itself (or its server) validates against `Tool.input_schema`."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class InnerReply:
    """What a program's call of a tool (run_code's) got back: what a direct call would have shown."""

    ok: bool
    text: str
    status: str = "ok"  # the observation's status (ok, error, timeout, denied, rejected)
    end: str | None = None  # the program stops at this call, and why (a move the opponent answered, a submission)
    submission: str | None = None  # the call ended the run with this answer


class ProgramHost(Protocol):
    """What the harness gives a program that a tool runs (run_code's): the run's other tools, through the
    dispatcher, and the record a resumed run starts the program again from."""

    def call(self, tool: str, arguments: str) -> InnerReply:
        """Call `tool` with its arguments as JSON, as a direct call would be made."""
        ...

    def files_before(self) -> str | None:
        """The workspace's files as the program's first run found them (JSON, as `record_files` got it), so a
        run after a crash reports the changes of the whole program; None on its first run."""
        ...

    def record_files(self, files: str) -> None: ...


class CallHost(Protocol):
    """What the harness gives a call whose work goes on outside it (an MCP server's tool): a record of work that
    outlives the call, the run's model for requests the call makes of it, and a line of progress. The dispatcher
    makes one per call, bound to the call's step and id."""

    def started(self, handle: dict[str, Any]) -> None:
        """Journal the handle of work the call left running elsewhere (an MCP task), before waiting on it."""
        ...

    def attached(self) -> dict[str, Any] | None:
        """The handle an earlier process journaled for this call: a resumed call follows that work to its end
        instead of calling again. None on a call's first run."""
        ...

    def sample(self, server: str, messages: list[Message], max_tokens: int) -> ModelReply:
        """The run's model answering a request made on the call's behalf (an MCP server's sampling request),
        journaled and billed to the run. Raises SamplingRefused where the run's model may not be asked."""
        ...

    def progress(self, text: str) -> None:
        """Say how far the call has got (shown on the progress line; not journaled)."""
        ...


class SamplingRefused(Exception):
    """The run's model is not asked on a call's behalf; the message says why."""


@dataclass(frozen=True)
class ToolContext:
    sandbox: Sandbox
    timeout_s: float
    # For write tools: stable across a resume (see agent.dispatch.idempotency_key), so a
    # tool can tag its effect and `already_done` can find it after a crash.
    idempotency_key: str = ""
    call_id: str = ""  # the call being run, and the step of its reply: what a tool that dates its effects records
    step: int = 0
    # A person's recorded answers to the questions this call's tool asked before (an MCP server's
    # elicitation), in the order asked: a resumed or replayed call is answered from them.
    inputs: tuple[Mapping[str, Any], ...] = ()
    # How this call's program reaches the run's other tools (run_code): through the dispatcher, each call
    # journaled under this one. None where no dispatcher runs the call.
    program: ProgramHost | None = None
    # The run's side of a call whose work goes on elsewhere (an MCP server's): None where no dispatcher runs it.
    host: CallHost | None = None


@dataclass(frozen=True)
class ToolResult:
    text: str
    ok: bool = True
    exit_code: int | None = None
    timed_out: bool = False
    # The model erred within the rules of the task (an illegal chess move, say):
    # shown as an error, but never counted toward the failure backstop.
    domain_error: bool = False
    submission: str | None = None  # set by tools that end the run with an answer
    # Under first_write_wins, the text every later call of the same reply gets once
    # this write ran; None gives the dispatcher's generic explanation.
    rejects_later: str | None = None
    # Questions the tool asked that only a person can answer (an MCP server's elicitation): the
    # result is set aside, the run stops awaiting approval, and a resume calls again with the answers.
    awaiting_input: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Tool:
    name: str
    summary: str  # one line, shown when schemas are disclosed progressively
    description: str  # the full text
    args: type[BaseModel]
    effect: Effect
    run: Callable[[Any, ToolContext], ToolResult]
    # JSON schema of the arguments when it comes from outside (MCP); else derived from `args`.
    input_schema: dict[str, Any] | None = None
    # A tighter schema for constrained decoding only (never shown to the model), computed at
    # each call from live state; a local engine can follow it, other providers ignore it.
    constraint: Callable[[], dict[str, Any]] | None = None
    # Ask for approval even where the policy's global rule would not (a write tool of an
    # untrusted MCP server); a per_tool rule in the policy still decides.
    asks_approval: bool = False
    # For write tools: after a crash between a call's intent and its result, look at the
    # world and return the result the call would have reported if its effect is already in
    # place, or None if it is not (then it is safe to run again). Without it, the policy's
    # `checkpoint.interrupted_writes` decides.
    already_done: Callable[[Any, ToolContext], ToolResult | None] | None = None
    # A tool that journals its own effects as they happen (run_code: each call its program makes): after a
    # crash it runs again, and what it journaled is taken as it was instead of done twice.
    resumes: bool = False

    def schema(self) -> dict[str, Any]:
        if self.input_schema is not None:
            return self.input_schema
        return _clean_schema(self.args.model_json_schema())


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's `title` noise, which costs tokens and tells the model nothing."""
    out = {k: v for k, v in schema.items() if k != "title"}
    if "properties" in out:
        out["properties"] = {
            name: {k: v for k, v in prop.items() if k != "title"} for name, prop in out["properties"].items()
        }
    return out


def openai_schema(tool: Tool, description: str | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": description if description is not None else tool.description,
            "parameters": tool.schema(),
        },
    }


def anthropic_schema(tool: Tool, description: str | None = None) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": description if description is not None else tool.description,
        "input_schema": tool.schema(),
    }


@dataclass
class Registry:
    tools: dict[str, Tool] = field(default_factory=dict)
    # The state these tools act on beyond the sandbox's files (a chess position), as text: what the account
    # after a run_code program shows besides the files it changed.
    world: Callable[[], str] | None = None

    @classmethod
    def of(cls, tools: Iterable[Tool], world: Callable[[], str] | None = None) -> Registry:
        reg = cls(world=world)
        for tool in tools:
            reg.add(tool)
        return reg

    def add(self, tool: Tool) -> None:
        if tool.name in self.tools:
            raise ValueError(f"two tools are named {tool.name!r}; tool names must be unique")
        self.tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return sorted(self.tools)

    def __iter__(self):
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)


class ToolRecord(BaseModel):
    """A tool as a run offered it to the model: what run.json and artifacts/tools.json keep, so
    rerender, reports and resume know exactly what the model saw."""

    model_config = ConfigDict(frozen=True)
    name: str
    server: str  # "builtin", or the MCP server whose tool it is
    effect: Effect
    summary: str
    description: str
    input_schema: dict[str, Any]
    # It can look at the world after a crash (`Tool.already_done`): a resume settles its interrupted calls so,
    # and a replay of the resume must too.
    checks: bool = False
    # It waits for a person's approval whatever the policy (an MCP server's setting): a replay stops where the run did.
    asks_approval: bool = False

    @property
    def schema_sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.input_schema, sort_keys=True).encode()).hexdigest()


def record(tool: Tool) -> ToolRecord:
    server, sep, _ = tool.name.partition("__")  # MCP tools are named SERVER__tool
    return ToolRecord(
        name=tool.name,
        server=server if sep else "builtin",
        effect=tool.effect,
        summary=tool.summary,
        description=tool.description,
        input_schema=tool.schema(),
        checks=tool.already_done is not None,
        asks_approval=tool.asks_approval,
    )


def recorded_tool(rec: ToolRecord) -> Tool:
    """A recorded tool with its schema and texts, for pricing and reports: it cannot run."""

    def unavailable(args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"{rec.name} is a recorded tool description; it cannot run here.", ok=False)

    return Tool(
        name=rec.name,
        summary=rec.summary,
        description=rec.description,
        args=FreeArgs,
        effect=rec.effect,
        run=unavailable,
        input_schema=rec.input_schema,
        asks_approval=rec.asks_approval,
    )
