"""Constrained decoding: a grammar (from a JSON schema) masks the logits of one request.

    grammars = Grammars(engine.tokenizer, engine.model_config.vocab_size, engine.eos_ids)
    compiled = grammars.tool_call(tools, name="get_weather")   # or .json_schema(schema)
    params = SamplingParams(..., logits_processor=GrammarProcessor(compiled))

A tool-call grammar accepts exactly one Hermes block,
`<tool_call>\n{"name": "<tool>", "arguments": <object valid for its schema>}\n</tool_call>`,
then only an end-of-sequence token, so even a tiny model emits a parseable, schema-valid call.
xgrammar compiles the grammar against the tokenizer's vocabulary; its matcher, fed the
tokens generated so far, fills a bitmask of the allowed next tokens.
"""

import json
import re
import threading
from collections import OrderedDict

import jsonschema
import torch
import xgrammar as xgr

from engine.errors import InvalidRequestError
from engine.tokenizer import Tokenizer
from engine.tool_format import normalise_tool

CALL_OPEN = "<tool_call>\n"
CALL_CLOSE = "\n</tool_call>"


def check_schema(schema, what: str) -> None:
    """Raise InvalidRequestError unless `schema` is a JSON object that is a valid JSON Schema."""
    if not isinstance(schema, dict):
        raise InvalidRequestError(f"{what} must be a JSON Schema object, got {type(schema).__name__}")
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as e:
        raise InvalidRequestError(f"{what} is not a valid JSON Schema: {e.message}") from None
    except (TypeError, ValueError, RecursionError) as e:  # e.g. a non-hashable `$schema`
        raise InvalidRequestError(f"{what} is not a valid JSON Schema: {e}") from None


def call_schema(tools: list[dict], name: str | None = None) -> dict:
    """JSON schema of `{"name": ..., "arguments": ...}` for one named tool, or any of `tools`."""
    fns = [normalise_tool(t)["function"] for t in tools]
    if name is not None:
        fns = [f for f in fns if f.get("name") == name]
        if not fns:
            known = ", ".join(str(f.get("name")) for f in (normalise_tool(t)["function"] for t in tools))
            raise InvalidRequestError(f"tool_choice names tool {name!r}, which is not among the tools ({known})")
    if not fns:
        raise InvalidRequestError("tool_choice asks for a tool call but the request has no tools")
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"const": f.get("name")},
                "arguments": f.get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for f in fns
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def _tokenizer_info(tokenizer: Tokenizer, vocab_size: int, stop_ids: list[int]) -> xgr.TokenizerInfo:
    encoded = [""] * vocab_size
    for token, idx in tokenizer.tok.get_vocab(with_added_tokens=True).items():
        if idx < vocab_size:
            encoded[idx] = token
    # Control tokens (<|im_start|>, <repo_name>...) must never appear inside a grammar's
    # text; an empty entry is how xgrammar marks a token it may not emit.
    for idx in tokenizer.tok.get_added_tokens_decoder():
        if idx < vocab_size:
            encoded[idx] = ""
    return xgr.TokenizerInfo(
        encoded, xgr.VocabType.BYTE_LEVEL, vocab_size=vocab_size, stop_token_ids=stop_ids, add_prefix_space=False
    )


class Grammars:
    """Compiles and caches grammars for one tokenizer. Thread-safe."""

    def __init__(self, tokenizer: Tokenizer, vocab_size: int, stop_ids, cache_size: int = 64):
        self.vocab_size = vocab_size
        self.info = _tokenizer_info(tokenizer, vocab_size, sorted(stop_ids))
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: str, build) -> xgr.CompiledGrammar:
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        try:
            compiled = self.compiler.compile_grammar(build())
        except (RuntimeError, ValueError, TypeError) as e:
            raise InvalidRequestError(f"cannot build a grammar from this schema: {schema_problem(e)}") from None
        with self._lock:
            self._cache[key] = compiled
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return compiled

    def tool_call(self, tools: list[dict], name: str | None = None) -> xgr.CompiledGrammar:
        for t in tools:
            fn = normalise_tool(t)["function"]
            check_schema(fn.get("parameters") or {"type": "object"}, f"the parameters of tool {fn.get('name')!r}")
        schema = call_schema(tools, name)
        return self._get(
            "call:" + json.dumps(schema, sort_keys=True),
            lambda: xgr.Grammar.concat(
                _literal(CALL_OPEN), xgr.Grammar.from_json_schema(schema, any_whitespace=False), _literal(CALL_CLOSE)
            ),
        )

    def json_schema(self, schema: dict | None) -> xgr.CompiledGrammar:
        """A JSON value valid for `schema`; None means any JSON object (json_object mode)."""
        if schema is None:
            schema = {"type": "object"}
        check_schema(schema, "the response_format schema")
        return self._get(
            "json:" + json.dumps(schema, sort_keys=True),
            lambda: xgr.Grammar.from_json_schema(schema, any_whitespace=False),
        )


def schema_problem(error: Exception) -> str:
    """What xgrammar found wrong, without the time and the file and line of its C++ source it prefixes."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return _SOURCE.sub("", first)[:300]


_SOURCE = re.compile(r"^(\[[\d:]+\]\s*)?(\S+\.(cc|cpp|h|hpp|py):\d+:\s*)?")


def _literal(text: str) -> xgr.Grammar:
    return xgr.Grammar.from_ebnf("root ::= " + json.dumps(text))


class GrammarProcessor:
    """One request's grammar: a logits processor that masks every token the grammar forbids.
    The engine masks all of a step's grammar rows together (`batch`); called alone, it masks one row."""

    def __init__(self, compiled: xgr.CompiledGrammar):
        self.matcher = xgr.GrammarMatcher(compiled)
        self.vocab_size = compiled.tokenizer_info.vocab_size
        self.accepted = 0

    def advance(self, generated: list[int]) -> bool:
        """Feed the matcher the tokens generated since the last call; False once the grammar is done."""
        for token in generated[self.accepted :]:
            if not self.matcher.accept_token(token):
                raise ValueError(f"token {token} does not continue the grammar's text")
            self.accepted += 1
        return not self.matcher.is_terminated()

    def __call__(self, generated: list[int], logits: torch.Tensor) -> torch.Tensor:
        mask_rows(logits.unsqueeze(0), [(0, self, generated)])
        return logits

    @staticmethod
    def batch(logits: torch.Tensor, rows: list[tuple[int, "GrammarProcessor", list[int]]]) -> dict[int, Exception]:
        return mask_rows(logits, rows)


_filler = xgr.BatchGrammarMatcher()  # fills the rows' bitmasks on several threads
_BITS = 32


def mask_rows(logits: torch.Tensor, rows: list[tuple[int, GrammarProcessor, list[int]]]) -> dict[int, Exception]:
    """Mask, in place, each listed row of `logits` to what its grammar allows next; the rows whose
    grammar cannot go on get the error instead. The bitmasks are filled on the host and applied
    on the logits' own device."""
    errors: dict[int, Exception] = {}
    live = []
    for i, processor, generated in rows:
        try:
            if processor.advance(generated):
                live.append((i, processor))
        except Exception as e:  # a token the grammar refuses: this request alone fails
            errors[i] = e
    if not live:
        return errors
    vocab = live[0][1].vocab_size
    bitmask = xgr.allocate_token_bitmask(len(live), vocab)
    _filler.batch_fill_next_token_bitmask([p.matcher for _, p in live], bitmask)
    words = bitmask.to(logits.device)
    shifts = torch.arange(_BITS, device=logits.device, dtype=words.dtype)
    allowed = ((words.unsqueeze(-1) >> shifts) & 1).view(len(live), -1)[:, :vocab].bool()
    index = torch.tensor([i for i, _ in live], device=logits.device)
    logits[index, :vocab] = logits[index, :vocab].masked_fill(~allowed, float("-inf"))
    return errors
