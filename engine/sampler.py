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
        def bad(what: str):
            raise InvalidRequestError(f"invalid sampling parameter: {what}")

        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            bad(f"max_tokens={self.max_tokens!r}; it must be an integer >= 1")
        if not isinstance(self.temperature, (int, float)) or not math.isfinite(self.temperature) or self.temperature < 0:
            bad(f"temperature={self.temperature!r}; it must be a finite number >= 0 (0 = greedy)")
        if not isinstance(self.top_p, (int, float)) or not (0 < self.top_p <= 1):
            bad(f"top_p={self.top_p!r}; it must be in (0, 1]")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            bad(f"top_k={self.top_k!r}; it must be an integer >= 0 (0 = off)")
        if self.seed is not None and not isinstance(self.seed, int):
            bad(f"seed={self.seed!r}; it must be an integer or None")
        if any(not isinstance(s, str) or not s for s in self.stop):
            bad(f"stop={self.stop!r}; stop strings must be non-empty strings")
        if self.logits_processor is not None and not callable(self.logits_processor):
            bad("logits_processor must be callable(generated_ids, logits) -> logits")


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
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.empty_like(logits).scatter_(0, idx, sorted_logits)
    return logits


def apply_processors(
    logits: torch.Tensor, params: list[SamplingParams], generated: list[list[int]]
) -> tuple[torch.Tensor, dict[int, Exception]]:
    """Run each row's logits processor. A processor that raises fails only its own row:
    the error is returned for the engine to fail that request, the batch goes on."""
    rows = [i for i, p in enumerate(params) if p.logits_processor is not None]
    errors: dict[int, Exception] = {}
    if not rows:
        return logits, errors
    # The model's logits are inference-mode tensors, which refuse in-place writes
    # outside inference mode; processors (and this loop) need a normal copy.
    logits = logits.clone()
    for i in rows:
        try:
            out = params[i].logits_processor(generated[i], logits[i])
            if not isinstance(out, torch.Tensor) or out.shape != logits[i].shape:
                raise TypeError(f"logits processor returned {type(out).__name__}, expected a tensor of shape {tuple(logits[i].shape)}")
            if not bool((out > float("-inf")).any()):
                raise ValueError("logits processor left no token to sample (every logit is -inf or NaN)")
            logits[i] = out
        except Exception as e:  # a user callable: anything can come out of it
            errors[i] = e
    return logits, errors


def sample(
    logits: torch.Tensor,  # (B, vocab) float, processors already applied
    params: list[SamplingParams],
    generators: list[torch.Generator],
) -> list[int]:
    """One next token per row."""
    logits = logits.float()
    if all(p.greedy for p in params):
        return logits.argmax(-1).tolist()
    out = []
    for i, p in enumerate(params):
        row = logits[i]
        if p.greedy:
            out.append(int(row.argmax()))
            continue
        row = _filter(row / p.temperature, p.top_k, p.top_p)
        probs = row.softmax(-1)
        out.append(int(torch.multinomial(probs, 1, generator=generators[i])))
    return out
