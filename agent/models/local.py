"""The in-process local engine as a ModelClient: no HTTP, same prompts and prefix cache as the server.

    LocalModel()                      # `local`: the embedded SmolLM2-135M-Instruct
    LocalModel(path="model.gguf")     # `local:PATH`
    LocalModel(weights="int4")        # `local-int4`: the file's 4-bit weights, bfloat16 activations
    LocalModel(engine=an_engine)      # share an engine that is already loaded (its owner shuts it down)

With `return_within_s` (the run's tool timeout) every request carries a `ReturnHint` under this
client's own session key, so the engine's prefix cache keeps the run's prefix while its tools run.

With `ModelParams.tool_choice == "required"` decoding is constrained by a grammar built
from the tools' schemas, so the reply is always one schema-valid call.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

from agent.models.convert import to_openai
from core.errors import ContextOverflowError, HarnessError, PermanentModelError, TransientModelError
from core.policy import ModelParams
from core.types import FinishReason, Message, ModelReply, ToolCall, Usage
from tools.base import Tool, openai_schema

FINISH: dict[str, FinishReason] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}


def load_engine(path: str | None, weights: str, name: str):
    """The engine of the model at `path` (None: the embedded one), its loading failure said as a HarnessError."""
    from engine import Engine, EngineConfig, EngineError

    try:
        return Engine(path, EngineConfig(weights=weights))
    except EngineError as e:
        raise HarnessError(f"Cannot load the local model {name}: {e}") from None


class LocalModel:
    def __init__(
        self,
        path: str | None = None,
        engine=None,
        name: str | None = None,
        weights: str = "float32",
        return_within_s: float | None = None,
    ):
        from engine import ReturnHint

        kind = "local" if weights == "float32" else f"local-{weights}"
        self.name = name or (kind if path is None else f"{kind}:{path}")
        self.owns_engine = engine is None
        self.engine = load_engine(path, weights, self.name) if engine is None else engine
        self.hint = ReturnHint(uuid.uuid4().hex, return_within_s) if return_within_s is not None else None

    def close(self) -> None:
        """Shut down the engine this client loaded: its thread stops, and its weights and KV cache go. An
        engine it was given is its owner's to shut down."""
        if self.owns_engine:
            self.engine.shutdown()

    def context_window(self, params: ModelParams) -> int:
        return self.engine.context_window

    def complete(self, messages: Sequence[Message], tools: Sequence[Tool], params: ModelParams) -> ModelReply:
        from engine import ContextLengthError, EngineError
        from engine.chat import ChatRequest, finish, prepare

        request = ChatRequest(
            messages=to_openai(messages),
            tools=[openai_schema(t) for t in tools],
            grammar_tools=grammar_shapes(tools),
            tool_choice=params.tool_choice if tools else "auto",
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            seed=params.seed,
            response_format="json_schema" if params.reply_schema is not None else "text",
            response_schema=params.reply_schema,
        )
        start = time.perf_counter()
        try:
            ids, sampling = prepare(self.engine, request)
            output = self.engine.generate([ids], sampling, hint=self.hint)[0]
        except ContextLengthError as e:
            raise ContextOverflowError(f"{self.name}: {e}", e.tokens, e.limit) from None
        except EngineError as e:  # an invalid schema, say: retrying cannot help
            raise PermanentModelError(f"{self.name}: {e}") from None
        if output.finish_reason in ("error", "abort"):
            raise TransientModelError(f"{self.name}: generation failed: {output.error or output.finish_reason}")
        reply = finish(self.engine, request, output)
        calls = tuple(
            ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=c.name, arguments=c.arguments) for c in reply.tool_calls
        )
        return ModelReply(
            message=Message(role="assistant", text=reply.content, tool_calls=calls),
            usage=Usage(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cached_tokens=reply.cached_tokens,
                cache_write_tokens=reply.cache_write_tokens,
            ),
            finish_reason=FINISH.get(reply.finish_reason, "other"),
            model=self.name,
            latency_s=time.perf_counter() - start,
            ttft_s=reply.ttft_s,
        )


def grammar_shapes(tools: Sequence[Tool]) -> list[dict] | None:
    """Each tool's schema for the grammar: its live constraint where it has one."""
    if not any(t.constraint for t in tools):
        return None
    shapes = []
    for t in tools:
        shape = openai_schema(t)
        if t.constraint is not None:
            shape["function"]["parameters"] = t.constraint()
        shapes.append(shape)
    return shapes
