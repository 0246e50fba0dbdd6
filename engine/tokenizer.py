"""Tokenizer and chat template, both built from the model's own metadata.

A GGUF file carries its BPE vocabulary, merges and Jinja chat template; a Hugging
Face directory carries tokenizer.json and tokenizer_config.json. Either way the
result is a `Tokenizer` with encode/decode and `render_chat` (Hermes tool format).

`encode_chat` lets only the template's own structure become special tokens: text that
came from a request (message contents, tool calls, tool results, tool schemas, roles)
is encoded with special-token parsing off, so a user who writes `<|im_start|>` gets
the characters, never the control token. It escapes special-token text in that text
before rendering, splits the rendered prompt at the special tokens that remain (the
template's), and encodes the text between them with parsing off after unescaping; for
text without special-token strings the ids are the same as encoding the rendered prompt.
"""

import json
import re
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from engine.errors import InvalidRequestError, ModelLoadError
from engine.tool_format import to_plain_messages
from engine.weights import Checkpoint

# ChatML, used when a model carries no template of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Split regexes of llama.cpp's BPE pre-tokenizer types, as Hugging Face tokenizers write them.
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_LLAMA3_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def _pre_tokenizer(pre: str | None):
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":  # SmolLM/cosmo2: every digit alone, then GPT-2 byte-level splitting
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    split = {"qwen2": _QWEN2_SPLIT, "llama-bpe": _LLAMA3_SPLIT}.get(pre or "")
    if split:
        return pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(split), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    return byte_level


def _from_gguf_metadata(meta: dict, path) -> HFTokenizer:
    kind = meta.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise ModelLoadError(f"{path}: tokenizer type {kind!r} is not supported; only BPE ('gpt2') vocabularies are")
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges") or []]
    tok = HFTokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = _pre_tokenizer(meta.get("tokenizer.ggml.pre"))
    tok.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type") or []
    # Type 3 (control) and 4 (user-defined) tokens must never be split by BPE.
    special = [AddedToken(tokens[i], special=True, normalized=False) for i, t in enumerate(types) if t in (3, 4)]
    tok.add_special_tokens(special)
    return tok


# Escapes for special-token text inside untrusted strings: private-use code points a
# chat template passes through untouched. ESCAPE itself is escaped as ESCAPE ESCAPE.
ESCAPE = "\ue000"
FIRST_SPECIAL = 0xF0000  # special token k is written ESCAPE + chr(FIRST_SPECIAL + k)


class Tokenizer:
    def __init__(self, tok: HFTokenizer, chat_template: str | None, bos_token: str = "", eos_token: str = ""):
        self.tok = tok
        self.special_ids = {t.content: i for i, t in tok.get_added_tokens_decoder().items() if t.special}
        self.specials = sorted(self.special_ids, key=len, reverse=True)
        self.plain = HFTokenizer.from_str(tok.to_str())  # the same tokenizer, special-token parsing off
        self.plain.encode_special_tokens = True
        alternatives = "|".join(re.escape(t) for t in self.specials)
        self._escapable = re.compile(re.escape(ESCAPE) + ("|" + alternatives if alternatives else ""))
        self._split = re.compile(f"({alternatives})") if alternatives else None
        self._escaped = re.compile(re.escape(ESCAPE) + "(.)", re.DOTALL)
        self.bos_token = bos_token
        self.eos_token = eos_token
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_template_error
        env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
        self.template = env.from_string(chat_template or CHATML_TEMPLATE)

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def token_id(self, token: str) -> int | None:
        return self.tok.token_to_id(token)

    def render_chat(
        self, messages: list[dict], tools: list[dict] | None = None, add_generation_prompt: bool = True
    ) -> str:
        """Render messages (OpenAI-style, tool calls and results included) to prompt text."""
        plain = to_plain_messages(messages, tools)
        return self.template.render(
            messages=plain,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )

    def encode_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        add_generation_prompt: bool = True,
        continue_final: bool = False,
    ) -> list[int]:
        """The prompt's ids, special tokens only where the template wrote them (module docstring).
        `continue_final`: the last message is the start of the reply (an assistant prefill), so the
        prompt ends right after its text, the turn left open, with no generation prompt."""
        plain = [
            {k: self._escape(v) if isinstance(v, str) else v for k, v in m.items()}
            for m in to_plain_messages(messages, tools)
        ]
        rendered = self.template.render(
            messages=plain,
            add_generation_prompt=add_generation_prompt and not continue_final,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )
        if continue_final:
            final = plain[-1].get("content")
            at = rendered.rfind(final) if isinstance(final, str) and final else -1
            if not isinstance(final, str) or at == -1:
                raise InvalidRequestError(
                    "this model's chat template does not write the final assistant message as sent, "
                    "so the reply cannot continue it; end the conversation with a user message"
                )
            rendered = rendered[: at + len(final)]
        parts = self._split.split(rendered) if self._split else [rendered]
        ids: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:  # a separator the split captured: a special token of the template's
                ids.append(self.special_ids[part])
            elif part:
                ids += self.plain.encode(self._unescape(part), add_special_tokens=False).ids
        return ids

    def _escape(self, text: str) -> str:
        index = {t: k for k, t in enumerate(self.specials)}
        return self._escapable.sub(
            lambda m: ESCAPE + (ESCAPE if m[0] == ESCAPE else chr(FIRST_SPECIAL + index[m[0]])), text
        )

    def _unescape(self, text: str) -> str:
        return self._escaped.sub(lambda m: ESCAPE if m[1] == ESCAPE else self.specials[ord(m[1]) - FIRST_SPECIAL], text)

    @classmethod
    def from_checkpoint(cls, ckpt: Checkpoint) -> "Tokenizer | None":
        """None when the checkpoint carries no tokenizer (dummy weights, bare safetensors)."""
        meta = ckpt.metadata
        if ckpt.kind == "gguf":
            tok = _from_gguf_metadata(meta, ckpt.path)
            tokens = meta["tokenizer.ggml.tokens"]
            bos = meta.get("tokenizer.ggml.bos_token_id")
            eos = meta.get("tokenizer.ggml.eos_token_id")
            return cls(
                tok,
                meta.get("tokenizer.chat_template"),
                tokens[bos] if bos is not None else "",
                tokens[eos] if eos is not None else "",
            )
        if ckpt.kind == "safetensors":
            assert ckpt.path is not None, "a safetensors checkpoint is loaded from a directory"
            file = Path(ckpt.path) / "tokenizer.json"
            if not file.is_file():
                return None  # weights without a tokenizer: the engine takes token ids only
            try:
                tok = HFTokenizer.from_file(str(file))
            except Exception as e:
                raise ModelLoadError(f"{file}: cannot read tokenizer ({e})") from e
            tc = meta.get("hf.tokenizer_config", {})
            return cls(
                tok, meta.get("tokenizer.chat_template"), _tok_str(tc.get("bos_token")), _tok_str(tc.get("eos_token"))
            )
        return None


def _tok_str(t) -> str:
    if isinstance(t, dict):
        return t.get("content", "")
    return t or ""


def _raise_template_error(message: str):
    raise jinja2.TemplateError(message)
