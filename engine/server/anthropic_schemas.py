"""Request and response bodies of the Anthropic Messages API, as much of it as the engine serves."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NAME = r"^[a-zA-Z0-9_-]{1,128}$"


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class CacheControl(_In):
    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class TextBlock(_In):
    type: Literal["text"]
    text: str
    cache_control: CacheControl | None = None


class ToolUseBlock(_In):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: CacheControl | None = None


class ToolResultBlock(_In):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextBlock] = ""
    is_error: bool = False
    cache_control: CacheControl | None = None


class ThinkingBlock(_In):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(_In):
    type: Literal["redacted_thinking"]
    data: str


Block = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock, Field(discriminator="type")
]


class MessageIn(_In):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class ToolIn(_In):
    name: str = Field(pattern=NAME)
    description: str | None = None
    input_schema: dict[str, Any]
    type: Literal["custom"] | None = None
    cache_control: CacheControl | None = None


class ToolChoice(_In):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingConfig(_In):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None


class OutputFormat(_In):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(_In):
    format: OutputFormat | None = None


class Conversation(_In):
    """What a prompt is made of: all that count_tokens takes, and the start of a Messages request."""

    model: str
    messages: list[MessageIn] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[ToolIn] | None = None
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None
    output_config: OutputConfig | None = None


class MessagesRequest(Conversation):
    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    stream: bool = False


# ------------------------------------------------------------------ responses


class TextOut(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseOut(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class UsageOut(BaseModel):
    input_tokens: int  # neither read from nor written to the cache
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"]


class MessageOut(BaseModel):
    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[TextOut | ToolUseOut]
    stop_reason: StopReason | None
    stop_sequence: str | None = None
    usage: UsageOut


class TokenCount(BaseModel):
    input_tokens: int


class ModelInfo(BaseModel):
    type: Literal["model"] = "model"
    id: str
    display_name: str
    created_at: str  # RFC 3339
    lifecycle: Literal["active"] = "active"
    max_input_tokens: int


class ModelPage(BaseModel):
    data: list[ModelInfo]
    has_more: bool = False
    first_id: str | None
    last_id: str | None
