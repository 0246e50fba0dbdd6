"""Request and response bodies of OpenAI Chat Completions, as much of it as the engine serves."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NAME = r"^[a-zA-Z0-9_-]{1,64}$"


class _In(BaseModel):
    # Unknown fields are ignored, as OpenAI-compatible servers do; known ones are type-checked strictly.
    model_config = ConfigDict(extra="ignore", strict=True)


class TextPart(_In):
    type: Literal["text"]
    text: str


Content = str | list[TextPart]


class FunctionCall(_In):
    name: str
    arguments: str


class ToolCallIn(_In):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessage(_In):
    role: Literal["system", "developer"]
    content: Content


class UserMessage(_In):
    role: Literal["user"]
    content: Content


class AssistantMessage(_In):
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[ToolCallIn] | None = None


class ToolMessage(_In):
    role: Literal["tool"]
    content: Content
    tool_call_id: str


Message = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class FunctionDef(_In):
    name: str = Field(pattern=NAME)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDef(_In):
    type: Literal["function"]
    function: FunctionDef


class ToolName(_In):
    name: str


class NamedToolChoice(_In):
    type: Literal["function"]
    function: ToolName


class JsonSchemaFormat(_In):
    name: str = "response"
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(_In):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_In):
    include_usage: bool = False


class ChatCompletionRequest(_In):
    model: str
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolDef] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = Field(None, ge=-(2**63), lt=2**64, description="fits in 64 bits")
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=1, description="one choice per request")
    stream: bool = False
    stream_options: StreamOptions | None = None
    response_format: ResponseFormat | None = None
    # Known so that a value this server cannot honour is refused (openai_api.refuse_unsupported), not ignored.
    logprobs: bool | None = None
    top_logprobs: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None


# ------------------------------------------------------------------ responses


class FunctionOut(BaseModel):
    name: str
    arguments: str


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionOut


class ResponseMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None


class Choice(BaseModel):
    index: int = 0
    message: ResponseMessage
    finish_reason: Literal["stop", "length", "tool_calls"]
    logprobs: None = None


class PromptTokensDetails(BaseModel):
    cached_tokens: int


class CompletionTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class UsageOut(BaseModel):
    prompt_tokens: int  # includes the cached ones
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails = CompletionTokensDetails()


class Timings(BaseModel):
    """This server's own field, beside the OpenAI ones (llama.cpp's server names its own `timings` too)."""

    ttft_ms: float | None  # submission to first token, queueing included


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: UsageOut
    system_fingerprint: str | None = None
    timings: Timings | None = None


class DeltaToolCall(BaseModel):
    index: int
    id: str
    type: Literal["function"] = "function"
    function: FunctionOut


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[DeltaToolCall] | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop", "length", "tool_calls"] | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: UsageOut | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "harness-engine"
    # Beyond OpenAI's card, as vLLM's has `max_model_len`: what a client needs to keep its prompts in bounds.
    context_window: int  # tokens one request may hold, prompt and reply (the KV cache may cap max_model_len)
    max_model_len: int


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
