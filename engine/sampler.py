"""Sampling parameters and the sampler: greedy, temperature, top-k, top-p, seeded.

Each request owns a torch.Generator, seeded from `seed` when given, so its tokens
do not depend on which other requests shared its batches.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from engine.errors import InvalidRequestError

# A per-request hook: given the ids generated so far and the next-token logits (vocab,),
# return logits to sample from (e.g. -inf outside a grammar). Runs before temperature.
LogitsProcessor = Callable[[list[int], torch.Tensor], torch.Tensor]

# Below these, float32 sampling loses the distribution (logits / temperature overflow,
# top_p rounds to 0): temperature 0 is the way to ask for greedy decoding.
MIN_TEMPERATURE = 1e-5
MIN_TOP_P = 1e-6
SEED_MIN, SEED_END = -(2**63), 2**64  # what torch.Generator.manual_seed takes
MAX_STOPS, MAX_STOP_CHARS = 64, 1024  # every token searches the last MAX_STOP_CHARS characters


@dataclass
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 1.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means no top-k cut
    seed: int | None = None
    stop: list[str] = field(default_factory=list)  # generation ends before the first stop string
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    logits_processor: LogitsProcessor | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def validate(self) -> None:
        def bad(field: str, what: str):
            raise InvalidRequestError(
                f"invalid sampling parameter: {field}={getattr(self, field)!r}; {what}", param=field
            )

        def number(x) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            bad("max_tokens", "it must be an integer >= 1")
        if not number(self.temperature) or self.temperature < 0 or 0 < self.temperature < MIN_TEMPERATURE:
            bad("temperature", f"it must be 0 (greedy) or a finite number >= {MIN_TEMPERATURE}")
        if not number(self.top_p) or not (MIN_TOP_P <= self.top_p <= 1):
            bad("top_p", f"it must be in [{MIN_TOP_P}, 1]")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            bad("top_k", "it must be an integer >= 0 (0 = off)")
        if self.seed is not None and (not isinstance(self.seed, int) or not SEED_MIN <= self.seed < SEED_END):
            bad("seed", "it must be an integer that fits in 64 bits ([-2**63, 2**64)), or None")
        if any(not isinstance(s, str) or not s for s in self.stop):
            bad("stop", "stop strings must be non-empty strings")
        if len(self.stop) > MAX_STOPS or any(len(s) > MAX_STOP_CHARS for s in self.stop):
            bad("stop", f"at most {MAX_STOPS} stop strings of at most {MAX_STOP_CHARS} characters each")
        if self.logits_processor is not None and not callable(self.logits_processor):
            bad("logits_processor", "it must be callable(generated_ids, logits) -> logits")


def make_generator(seed: int | None) -> torch.Generator:
    g = torch.Generator()
    if seed is None:
        g.seed()  # fresh non-deterministic state
    else:
        g.manual_seed(seed)
    return g


def _filter(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, idx = torch.sort(logits, descending=True)
        probs = sorted_logits.softmax(-1)
        # Drop a token when the mass before it already reaches top_p; the first always stays.
        drop = (probs.cumsum(-1) - probs) >= top_p
        drop[0] = False
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.empty_like(logits).scatter_(0, idx, sorted_logits)
    return logits


def apply_processors(
    logits: torch.Tensor, params: list[SamplingParams], generated: list[list[int]]
) -> tuple[torch.Tensor, dict[int, Exception]]:
    """Run each row's logits processor. A processor that raises fails only its own row:
    the error is returned for the engine to fail that request, the batch goes on.
    Processors that offer a batched form (`processor.batch`, e.g. grammars) run together,
    once per step, on the logits' own device."""
    processors = {i: p.logits_processor for i, p in enumerate(params) if p.logits_processor is not None}
    errors: dict[int, Exception] = {}
    if not processors:
        return logits, errors
    # The model's logits are inference-mode tensors, which refuse in-place writes
    # outside inference mode; processors (and this loop) need a normal copy.
    logits = logits.clone()
    batched: dict[Callable, list[tuple[int, LogitsProcessor, list[int]]]] = {}
    for i, processor in processors.items():
        batch = getattr(processor, "batch", None)
        if batch is not None:
            batched.setdefault(batch, []).append((i, processor, generated[i]))
            continue
        try:
            out = processor(generated[i], logits[i])
            if not isinstance(out, torch.Tensor) or out.shape != logits[i].shape:
                raise TypeError(
                    f"logits processor returned {type(out).__name__}, expected a tensor of shape {tuple(logits[i].shape)}"
                )
            logits[i] = out
        except Exception as e:  # a user callable: anything can come out of it
            errors[i] = e
    for batch, items in batched.items():
        errors.update(batch(logits, items))
    rows = [i for i in processors if i not in errors]
    if rows:
        alive = (logits[rows] > float("-inf")).any(-1).tolist()
        for i, ok in zip(rows, alive):
            if not ok:
                errors[i] = ValueError("logits processor left no token to sample (every logit is -inf or NaN)")
    return logits, errors


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """logits (B, V) -> (B,) index of each row's first maximum, as `logits.argmax(-1)`. On a GPU
    torch reduces a long row in one block (38 µs for a 128K vocabulary on an H200, 4% of a
    1B-shape decode step); cut into up to 256 chunks, the row is reduced in parallel. The first
    chunk that holds the maximum holds its first occurrence, so ties resolve the same way."""
    b, v = logits.shape
    chunks = math.gcd(v, 256)
    values, at = logits.reshape(b, chunks, v // chunks).max(-1)
    chunk = values.argmax(-1, keepdim=True)
    return (chunk * (v // chunks) + at.gather(-1, chunk)).squeeze(-1)


class SamplingError(ValueError):
    """A row's distribution cannot be sampled (non-finite or all-zero probabilities)."""


def sample(
    logits: torch.Tensor,  # (B, vocab) float, processors already applied
    params: list[SamplingParams],
    generators: list[torch.Generator],
) -> list[int | Exception]:
    """One next token per row, or the error that row met: a row whose probabilities are
    not a distribution fails alone, never the batch it shares a step with.

    The whole batch is sampled at once on the logits' device: each sampled row draws one
    uniform number from its own generator and takes the token where that number falls in
    its cumulative distribution (inverse transform: exact, and one draw per token, so the
    tokens of a seeded request do not depend on its batch)."""
    greedy = [i for i, p in enumerate(params) if p.greedy]
    rows = [i for i, p in enumerate(params) if not p.greedy]
    if not rows:  # all greedy (a GPU decode step's usual case): one chunked argmax and one copy to the host
        return argmax(logits).tolist()
    logits = logits.float()
    out: list[int | Exception] = [0] * len(params)
    if greedy:
        for i, token in zip(greedy, argmax(logits[greedy]).tolist()):
            out[i] = token
    x = logits[rows]
    temperature = torch.tensor([params[i].temperature for i in rows], device=x.device)
    # Shifting by the maximum keeps logits / temperature finite for any allowed temperature.
    x = (x - x.max(-1, keepdim=True).values) / temperature[:, None]
    for j, i in enumerate(rows):
        if params[i].top_k or params[i].top_p < 1.0:
            x[j] = _filter(x[j], params[i].top_k, params[i].top_p)
    probs = x.softmax(-1)
    ok = (torch.isfinite(probs).all(-1) & (probs.sum(-1) > 0)).tolist()
    cdf = probs.cumsum(-1)
    u = torch.tensor([float(torch.rand((), generator=generators[i])) for i in rows], device=x.device)
    total = cdf[:, -1]
    # Kept below the total, so that rounding can never land past the last token of nonzero probability.
    at = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    picks = torch.searchsorted(cdf, at.unsqueeze(1), right=True).squeeze(1)
    for j, (i, token) in enumerate(zip(rows, picks.clamp_(max=x.shape[-1] - 1).tolist())):
        out[i] = (
            token
            if ok[j]
            else SamplingError(
                "the next-token probabilities are not finite (NaN or infinite logits); this request cannot be sampled"
            )
        )
    return out
