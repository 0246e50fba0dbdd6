"""Journal events: one JSON object per line of `events.jsonl`.

Every event has `type`, `seq`, `ts` and `step`; all but `tool_progress` (told to listeners, never written) are
written. The history the loop works on
can be rebuilt from `message`, `model_replied` and `tool_observed` events alone,
which is what reports, resume and replay rely on.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core.memory_entries import MemoryEntry
from core.memory_types import Fold
from core.types import Message, ModelReply, Observation, Usage


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    seq: int = 0
    ts: float = 0.0
    step: int = 0


class MessageAdded(_Event):
    """A system or user message entered the history (the task, a harness note)."""

    type: Literal["message"] = "message"
    message: Message


class ModelReplied(_Event):
    type: Literal["model_replied"] = "model_replied"
    reply: ModelReply
    prompt_messages: int  # how many messages the rendered prompt held
    prompt_chars: int  # visible text of the rendered prompt: a size that needs no tokenizer
    counted_tokens: int | None = None  # the harness's own count of the prompt (tools included)
    prefix_reused: int | None = None  # of those, the longest prefix shared with any earlier request of the run
    prompt_sha256: str | None = None  # digest of the rendered messages and tools shown (agent.prompt_digest)
    cost_usd: float | None = None  # the reply's usage at the run's price; None: unknown (no price, or an older journal)


class ModelFailed(_Event):
    type: Literal["model_failed"] = "model_failed"
    transient: bool
    message: str
    usage: Usage | None = None  # what the provider billed for the failed call, when it said; often it does not
    cost_usd: float | None = None  # None: unknown, so the run's total is a lower bound


class ToolIntent(_Event):
    """Written (and fsynced) before a write tool runs: record before acting."""

    type: Literal["tool_intent"] = "tool_intent"
    call_id: str
    tool: str
    arguments: dict[str, Any]
    idempotency_key: str


class ToolObserved(_Event):
    type: Literal["tool_observed"] = "tool_observed"
    observation: Observation
    traceback: str | None = None  # full traceback when the tool raised; the model saw the tail
    # What the tool's result told the dispatcher besides its text, so a resumed run
    # that finds this observation already journaled acts on it exactly as the live run did.
    submission: str | None = None
    rejects_later: str | None = None


class InnerIntent(_Event):
    """Written (and fsynced) before a write that a run_code program calls, as `tool_intent` before a direct one."""

    type: Literal["inner_intent"] = "inner_intent"
    parent: str  # the run_code call
    call_id: str  # PARENT.N: the program's N-th call
    tool: str
    arguments: dict[str, Any]
    idempotency_key: str


class InnerObserved(_Event):
    """What one call of a run_code program got: the observation a direct call would have had (its text cut
    head and tail as a direct call's, the whole kept in artifacts/ as `observation.truncation.artifact`), so a
    run killed inside the program answers this call from here when the program runs again."""

    type: Literal["inner_observed"] = "inner_observed"
    parent: str
    arguments: str  # JSON, as the program sent them: a run after a crash checks the program asks the same
    observation: Observation
    traceback: str | None = None
    end: str | None = None  # the program stopped at this call, and why
    submission: str | None = None


class ProgramFiles(_Event):
    """The workspace's files as a run_code program's first run found them (path -> size and mtime, in an
    artifact): a run after a crash compares with these, so its account says what the uninterrupted run's would."""

    type: Literal["program_files"] = "program_files"
    call_id: str
    artifact: str  # path, relative to the run dir


class MemoryWritten(_Event):
    """What one `memory` tool call changed, dated as entries (core.memory_entries): journaled after its intent
    and before its observation, so resume and replay rebuild the store from these events alone."""

    type: Literal["memory_written"] = "memory_written"
    call_id: str
    entries: list[MemoryEntry]
    reply: str  # the call's reply: a resumed run reports it for an interrupted call whose entries are here


class ApprovalGiven(_Event):
    """A person's decision on a call that waits for approval (`harness approve`), or their answer to a
    tool's question (`call_id` is then the question's id, CALL.inputN)."""

    type: Literal["approval"] = "approval"
    call_id: str
    approved: bool
    note: str = ""
    answer: dict[str, Any] | None = None  # an accepted question's form content


class InputRequested(_Event):
    """A tool asked a question only a person can answer (an MCP server's elicitation) while call `call_id`
    ran: the call's result was set aside and the run stops awaiting the answer; a resume calls again."""

    type: Literal["input_requested"] = "input_requested"
    call_id: str
    input_id: str  # CALL.inputN: the n-th question of the call, the id `harness approve` answers
    question: dict[str, Any]  # server, message, schema, url: as tools.mcp.elicitation.Question holds them


class ResourceUpdated(_Event):
    """A resource placed in the opening prompt changed: its new content is appended to the history, so
    every earlier prompt token stays a cached prefix; `tokens` is what the update adds to each later prompt."""

    type: Literal["resource_updated"] = "resource_updated"
    server: str
    uri: str
    sha256: str
    message: Message
    tokens: int | None = None


class SamplingReplied(_Event):
    """An MCP server's sampling request that its settings allow, answered by the run's model during call `call_id`
    and billed to the run. A call made again (a resume, a replay) is answered from these, in order."""

    type: Literal["sampling_replied"] = "sampling_replied"
    server: str
    call_id: str
    request_sha256: str  # of the messages and the token cap the model was asked with
    request_messages: int
    reply: ModelReply | None = None
    error: str | None = None  # the model call failed instead: its type and message, as the server was told
    cost_usd: float | None = None  # at the run's price; None: unknown


class TaskCreated(_Event):
    """Call `call_id` left its work running on its MCP server as a task (the Tasks extension): the handle,
    journaled before the harness waits on it, so a run killed meanwhile follows the same task on resume
    instead of calling the tool again."""

    type: Literal["task_created"] = "task_created"
    call_id: str
    tool: str
    server: str
    task_id: str
    status: str  # as the server first reported it (working, input_required...)
    created_at: str | None = None  # the server's clock
    ttl_ms: int | None = None  # how long after creation the server may forget the task; None: unlimited
    poll_interval_ms: int | None = None


class ToolProgress(_Event):
    """How far a running call has got (an MCP server's progress notification, a task's status message): told to
    the journal's listeners while the call runs, never written to events.jsonl."""

    type: Literal["tool_progress"] = "tool_progress"
    call_id: str
    tool: str
    text: str


class Compacted(_Event):
    """One compaction: what it saved, the memory it produced (versioned, so reports can diff
    memories), what the summariser cost and whether its reply was cut off by its token cap."""

    type: Literal["compaction"] = "compaction"
    ok: bool
    trigger: str  # "tokens" | "every_steps"
    version: int | None  # the working memory version produced; None when nothing was folded
    tokens_before: int
    tokens_after: int
    fold: Fold | None  # the steps folded, the memory and the exact text it put in the prompt
    summariser_usage: Usage
    finish_reason: str
    cut_off: bool
    attempts: list[dict[str, Any]] = []
    message: str = ""


class Cut(BaseModel):
    """One observation cut to make the prompt fit: from then on the prompt shows `text` in its place."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    index: int  # the observation's position in the run's history
    call_id: str | None = None
    tool: str | None = None
    tokens_before: int
    tokens_after: int
    text: str
    artifact: str | None = None  # path, relative to the run dir, of the full text


class ContextOverflowed(_Event):
    """The next prompt did not fit the model's window, and what one recovery dropped to make room.

    Journaled before the step's model call. A fold here is in the prompt from this step on, exactly as a
    scheduled compaction's is from the next step; cuts replace observations in every later prompt."""

    type: Literal["context_overflow"] = "context_overflow"
    source: Literal["counted", "provider"]  # the harness's count said so before sending, or the provider refused
    tokens: int  # the prompt's tokens as the harness counted them, tool schemas included
    window: int | None  # None: unknown; the provider said the prompt was too long
    reply_tokens: int  # kept free for the reply (model.max_tokens)
    action: Literal["compact", "truncate"]
    tokens_after: int
    fold: Fold | None = None  # compact: the steps folded into the working memory
    cuts: list[Cut] = []  # truncate: the observations cut, largest first
    summariser_usage: Usage = Usage()
    attempts: list[dict[str, Any]] = []
    message: str = ""

    @property
    def dropped_tokens(self) -> int:
        return max(0, self.tokens - self.tokens_after)


class SummaryReplied(_Event):
    """One summariser call of a compaction, journaled as it returns (before its `compaction` event).

    The summariser is model work of its own: resume hands a compaction that a crash cut short its
    recorded replies again instead of asking anew, and replay feeds the summariser these replies and
    the agent its `model_replied` ones, so neither is handed the other's."""

    type: Literal["summary_replied"] = "summary_replied"
    request_sha256: str  # of the request (messages, tools, cap): a replay checks it was asked the same thing
    request_messages: int
    cap: int
    reply: ModelReply | None = None
    error: str | None = None  # the call raised instead: its type and message
    cost_usd: float | None = None  # at the run's price; None: unknown (another summariser, no price, an older journal)


class RunResumed(_Event):
    """A process took the run up again (`harness resume`): what it found and did about it."""

    type: Literal["resumed"] = "resumed"
    from_seq: int  # the snapshot's last seq; 0 when the state was rebuilt from the start
    notes: list[str] = []  # damaged lines skipped, fallbacks taken, calls reconciled


class SandboxOpened(_Event):
    """A container was started or taken up again for this run: its id, so a resume can find it."""

    type: Literal["sandbox_opened"] = "sandbox_opened"
    container_id: str
    how: Literal["started", "reconnected", "checkpoint"] = "started"
    checkpoint_step: int | None = None  # with "checkpoint": the step its filesystem was saved at


class Forked(_Event):
    """The branch point of a fork (`harness fork`): every event before it is inherited from the parent's steps
    up to `step`, and the world was rebuilt as the parent's after that step. Journaled once the world is
    rebuilt and checked, so a fork without it has not branched yet (a resume builds the branch again).

    `reshaped`: the fork's context policy differs from the parent's, so the folds and cuts inherited before
    this event are left behind and the compactions journaled right after it are the branch's own, made
    again under the fork's policy; later prompts build on those."""

    type: Literal["forked"] = "forked"
    parent: str  # the parent's run id
    parent_dir: str  # where the parent's run directory was
    inherited: int  # events inherited from the parent (those before this one)
    world: str  # how the world at the branch was rebuilt, in words
    world_sha256: str | None = None  # of the rebuilt world (every file's digest, or the game's position); None: none
    reshaped: bool = False
    notes: list[str] = []  # what changed at the branch: policy, model, seed, compaction state


class RunStopped(_Event):
    type: Literal["run_stopped"] = "run_stopped"
    reason: str
    message: str = ""
    outcome: dict[str, Any] = {}  # e.g. the submitted answer, whether the goal check passed


Event = Annotated[
    MessageAdded
    | ModelReplied
    | ModelFailed
    | ToolIntent
    | ToolObserved
    | InnerIntent
    | InnerObserved
    | ProgramFiles
    | MemoryWritten
    | ApprovalGiven
    | InputRequested
    | ResourceUpdated
    | SamplingReplied
    | TaskCreated
    | ToolProgress
    | Compacted
    | ContextOverflowed
    | SummaryReplied
    | RunResumed
    | SandboxOpened
    | Forked
    | RunStopped,
    Field(discriminator="type"),
]
EVENT = TypeAdapter(Event)
