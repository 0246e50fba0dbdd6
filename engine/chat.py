"""Chat requests: OpenAI-style messages and tools in, text and tool calls out.

Both HTTP APIs and the in-process client go through here, so a conversation is
rendered to the same tokens (and hits the same prefix cache) whichever way it came:

    request = ChatRequest(messages, tools, tool_choice="required")
    ids, params = prepare(engine, request)
    output = engine.generate([ids], params)[0]
    reply = finish(engine, request, output)      # content, tool_calls, finish_reason

`tool_choice` "required" or a tool's name, and `response_schema`, constrain decoding
with a grammar (see constrain.py); "auto" parses whatever Hermes calls the model wrote.
"""

import weakref
from dataclasses import dataclass, field

from engine.constrain import GrammarProcessor, Grammars, check_schema
from engine.engine import Engine
from engine.errors import InvalidRequestError
from engine.output import RequestOutput
from engine.sampler import SamplingParams
from engine.sequence import ReturnHint
from engine.tokenizer import Tokenizer
from engine.tool_format import ToolCall, normalise_tool, parse_tool_calls

_grammars: "weakref.WeakKeyDictionary[Engine, Grammars]" = weakref.WeakKeyDictionary()


@dataclass
class ChatRequest:
    messages: list[dict]  # OpenAI-style: role, content, tool_calls, tool_call_id
    tools: list[dict] = field(default_factory=list)  # OpenAI-style function tools
    tool_choice: str = "auto"  # "auto" | "none" | "required" | "tool" (then tool_name)
    tool_name: str | None = None
    # Tighter schemas for the grammar only, never rendered into the prompt: the prompt (and so
    # the prefix cache) stays the same while decoding follows live state, e.g. legal chess moves.
    grammar_tools: list[dict] | None = None
    response_format: str = "text"  # "text" | "json_object" | "json_schema"
    response_schema: dict | None = None
    max_tokens: int | None = None  # None: as many as the context window leaves
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    # The last message is an assistant's reply begun by the client (Anthropic's prefill): the reply continues it.
    continue_final: bool = False
    hint: ReturnHint | None = None  # the client's session, coming back after a tool call

    @property
    def constrained_call(self) -> bool:
        return bool(self.tools) and self.tool_choice in ("required", "tool")


@dataclass
class ChatReply:
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # "stop" | "length" | "tool_calls" | "abort" | "error"
    stop_sequence: str | None  # the stop string that ended generation, if one did
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int  # prompt tokens this request added to the prefix cache
    completion_tokens: int
    ttft_s: float | None  # submission to first token, queueing included


def grammars(engine: Engine) -> Grammars:
    """The engine's grammar compiler, built on first use (it indexes the whole vocabulary)."""
    found = _grammars.get(engine)
    if found is None:
        if engine.tokenizer is None:
            raise InvalidRequestError("constrained decoding needs a tokenizer; this model has none")
        found = _grammars.setdefault(engine, Grammars(engine.tokenizer, engine.model_config.vocab_size, engine.eos_ids))
    return found


def check_tools(tools: list[dict]) -> None:
    names = set()
    for i, tool in enumerate(tools):
        fn = normalise_tool(tool).get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise InvalidRequestError(f"tools[{i}] has no function name")
        if fn["name"] in names:
            raise InvalidRequestError(f"two tools are named {fn['name']!r}; tool names must be unique")
        names.add(fn["name"])
        if fn.get("parameters") is not None:
            check_schema(fn["parameters"], f"the parameters of tool {fn['name']!r}")


def prompt_ids(encoder: Engine | Tokenizer, request: ChatRequest) -> list[int]:
    """The request's conversation as prompt ids (the engine's, or its tokenizer's where no engine is)."""
    return encoder.encode_chat(request.messages, request.tools or None, continue_final=request.continue_final)


def prepare(engine: Engine, request: ChatRequest) -> tuple[list[int], SamplingParams]:
    """Render and tokenize the conversation and choose sampling. Raises InvalidRequestError."""
    check_tools(request.tools)
    if request.grammar_tools is not None:
        check_tools(request.grammar_tools)
    if request.tool_choice == "tool" and not request.tool_name:
        raise InvalidRequestError("tool_choice names no tool")
    processor = None
    if request.constrained_call:
        shapes = request.grammar_tools if request.grammar_tools is not None else request.tools
        compiled = grammars(engine).tool_call(shapes, request.tool_name if request.tool_choice == "tool" else None)
        processor = GrammarProcessor(compiled)
    elif request.tool_choice in ("required", "tool"):
        raise InvalidRequestError(f"tool_choice {request.tool_choice!r} needs at least one tool in `tools`")
    elif request.response_format in ("json_object", "json_schema"):
        processor = GrammarProcessor(grammars(engine).json_schema(request.response_schema))
    ids = prompt_ids(engine, request)
    params = SamplingParams(
        max_tokens=request.max_tokens or engine.max_model_len,
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        seed=request.seed,
        stop=list(request.stop),
        logits_processor=processor,
    )
    params.validate()
    return ids, params


def finish(engine: Engine, request: ChatRequest, output: RequestOutput) -> ChatReply:
    text = output.text
    calls: list[ToolCall] = []
    if request.tools and request.tool_choice != "none":
        parsed = parse_tool_calls(text)
        calls = parsed.tool_calls
        # A block that is not a valid call stays visible, so the caller sees what was written.
        text = text.strip() if parsed.errors else parsed.content
    reason = output.finish_reason or "error"
    stop_sequence = output.stop_sequence if reason == "stop" else None
    if calls and reason == "stop":
        reason = "tool_calls"
    usage = output.usage
    block = engine.config.block_size
    return ChatReply(
        content=text,
        tool_calls=calls,
        finish_reason=reason,
        stop_sequence=stop_sequence,
        prompt_tokens=usage.prompt_tokens,
        cached_tokens=usage.cached_tokens,
        cache_write_tokens=max(0, usage.prompt_tokens // block * block - usage.cached_tokens)
        if engine.radix is not None
        else 0,
        completion_tokens=usage.completion_tokens,
        ttft_s=output.ttft_s,
    )
