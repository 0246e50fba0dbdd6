"""Sampling: greedy, temperature, top-k, top-p, seeds, stop strings, EOS, max tokens, logits hook."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from engine import InvalidRequestError, SamplingParams
from engine.sampler import _filter, argmax, make_generator, sample


@pytest.fixture(scope="module")
def prompt(engine):
    return engine.encode_chat([{"role": "user", "content": "Name some animals."}])


def test_same_seed_same_tokens_different_seed_different_tokens(engine, prompt):
    def run(seed):
        p = SamplingParams(temperature=1.0, top_k=50, top_p=0.95, seed=seed, max_tokens=16, ignore_eos=True)
        return engine.generate([prompt], p)[0].token_ids

    a = run(7)
    assert run(7) == a
    assert run(8) != a
    # A seeded request gives the same tokens whether it runs alone or batched with others.
    p = SamplingParams(temperature=1.0, top_k=50, top_p=0.95, seed=7, max_tokens=16, ignore_eos=True)
    batched = engine.generate([prompt, prompt, engine.encode("Other traffic")], [p, SamplingParams(seed=1), p])
    assert batched[0].token_ids == a and batched[2].token_ids != a


def test_top_k_one_is_greedy(engine, prompt):
    greedy = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=12, ignore_eos=True))[0]
    top1 = engine.generate([prompt], SamplingParams(temperature=1.5, top_k=1, seed=3, max_tokens=12, ignore_eos=True))[
        0
    ]
    assert top1.token_ids == greedy.token_ids


@given(st.integers(1, 4), st.integers(1, 1100), st.integers(0, 2**32), st.sampled_from([torch.float32, torch.bfloat16]))
def test_chunked_argmax_picks_the_first_maximum_like_torch(rows, vocab, seed, dtype):
    """Six distinct values, so most rows tie: the chunked reduction must still pick the first."""
    levels = torch.tensor([-float("inf"), -1.0, 0.0, 0.5, 2.0, 1e4])
    pick = torch.randint(0, 6, (rows, vocab), generator=torch.Generator().manual_seed(seed))
    logits = levels[pick].to(dtype)
    assert argmax(logits).tolist() == logits.argmax(-1).tolist()


def test_top_k_and_top_p_filters_keep_the_right_tokens():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert torch.isfinite(_filter(logits, 2, 1.0)).tolist() == [True, True, False, False]
    assert torch.isfinite(_filter(logits, 0, 0.7)).tolist() == [True, True, False, False]
    assert torch.isfinite(_filter(logits, 0, 0.5)).tolist() == [True, False, False, False]
    assert torch.isfinite(_filter(logits, 0, 0.01)).tolist() == [True, False, False, False]


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"))],
)
def test_sampling_draws_each_token_at_its_probability_and_never_an_impossible_one(device):
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.0], device=device)
    rows = 20_000
    logits = torch.log(probs).expand(rows, -1)  # the last token: -inf
    params = [SamplingParams(temperature=1.0)] * rows
    drawn = sample(logits, params, [make_generator(seed) for seed in range(rows)])
    counts = torch.bincount(torch.tensor(drawn), minlength=5).double() / rows
    # four standard errors of a binomial share at 20,000 draws is under 0.014
    assert torch.allclose(counts, probs.double().cpu(), atol=0.014), counts
    assert counts[4] == 0
    # a greedy row, a sampled row and a row with no finite logit share one batch; each gets its own answer
    mixed = torch.stack([torch.log(probs), torch.log(probs), torch.full((5,), float("nan"), device=device)])
    greedy, sampled, broken = sample(
        mixed, [SamplingParams(temperature=0), SamplingParams(seed=1), SamplingParams(seed=2)], [make_generator(1)] * 3
    )
    assert greedy == 3 and sampled in (0, 1, 2, 3) and isinstance(broken, ValueError)


def test_max_tokens_eos_and_stop_strings(engine):
    prompt = engine.encode_chat([{"role": "user", "content": "What is the capital of France?"}])
    out = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=5, ignore_eos=True))[0]
    assert out.finish_reason == "length" and len(out.token_ids) == 5
    full = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=40))[0]
    assert full.finish_reason == "stop" and full.token_ids[-1] == 2  # <|im_end|> ends the turn
    assert "<|im_end|>" not in full.text
    # Stop at a string that occurs in the greedy text: the text ends right before it.
    words = full.text.split()
    stop = words[len(words) // 2]
    cut = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=40, stop=[stop]))[0]
    assert cut.finish_reason == "stop"
    assert cut.text == full.text[: full.text.index(stop)]
    stopped_by_id = engine.generate(
        [prompt], SamplingParams(temperature=0, max_tokens=40, stop_token_ids=[full.token_ids[3]])
    )[0]
    assert stopped_by_id.token_ids == full.token_ids[:4] and stopped_by_id.finish_reason == "stop"


def test_logits_processor_masks_what_may_be_generated(engine, prompt):
    allowed = engine.encode(" yes no")
    seen = []

    def only_yes_no(generated, logits):
        seen.append(list(generated))
        mask = torch.full_like(logits, float("-inf"))
        mask[allowed] = 0
        return logits + mask

    out = engine.generate(
        [prompt], SamplingParams(temperature=0.7, seed=0, max_tokens=6, logits_processor=only_yes_no)
    )[0]
    assert set(out.token_ids) <= set(allowed)
    assert seen == [out.token_ids[:i] for i in range(6)]  # called with the ids generated so far


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"temperature": -1}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -2}, "top_k"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": [""]}, "stop"),
        ({"logits_processor": 3}, "logits_processor"),
    ],
)
def test_invalid_sampling_parameters_are_rejected_clearly(engine, kwargs, words):
    with pytest.raises(InvalidRequestError, match=words):
        engine.generate(["hi"], SamplingParams(**kwargs))


def test_a_failing_logits_processor_fails_only_its_own_request(engine, prompt):
    def broken(generated, logits):
        if len(generated) == 2:
            raise RuntimeError("grammar exploded")
        return logits

    def masks_everything(generated, logits):
        return torch.full_like(logits, float("-inf"))

    greedy = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    expected = engine.generate([prompt], greedy)[0].token_ids
    outs = engine.generate(
        [prompt, prompt, prompt],
        [
            SamplingParams(temperature=0, max_tokens=6, logits_processor=broken),
            greedy,
            SamplingParams(temperature=0.5, max_tokens=6, logits_processor=masks_everything),
        ],
    )
    assert outs[0].finish_reason == "error" and "grammar exploded" in outs[0].error
    assert len(outs[0].token_ids) == 2
    assert outs[1].finish_reason == "length" and outs[1].token_ids == expected
    assert outs[2].finish_reason == "error" and "left no token to sample" in outs[2].error


def test_one_seed_draws_common_numbers_so_close_distributions_take_the_same_tokens():
    """Two requests with one seed, whose next-token distributions differ a little at every position (two
    renderings of one context; 3.5% total variation on average), take the same token at most positions (82%:
    inverse-CDF coupling, below the 96% the best coupling reaches); with two seeds they agree about as often as
    chance (18%). Paired forks of a run rely on this."""
    torch.manual_seed(0)
    positions, vocab = 400, 50
    base = torch.randn(positions, vocab) * 2
    moved = base + torch.randn(positions, vocab) * 0.1
    params = [SamplingParams(seed=7)]

    def tokens(logits: torch.Tensor, seed: int) -> list[int]:
        g = make_generator(seed)
        return [sample(logits[i : i + 1], params, [g])[0] for i in range(positions)]

    same_seed = sum(a == b for a, b in zip(tokens(base, 7), tokens(moved, 7))) / positions
    two_seeds = sum(a == b for a, b in zip(tokens(base, 7), tokens(moved, 8))) / positions
    assert same_seed > 0.75 and two_seeds < 0.3, (same_seed, two_seeds)
