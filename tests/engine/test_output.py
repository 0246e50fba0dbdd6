"""The incremental detokeniser (engine/output.py) against decoding everything at once,
with the real SmolLM2 tokenizer: any id sequence (half-finished UTF-8 characters,
special tokens, arbitrary ids), stop strings spanning tokens, and a stream's hold-back."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.output import REPLACEMENT, TextOutput
from engine.tokenizer import Tokenizer

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def tokenizer(checkpoint) -> Tokenizer:
    return Tokenizer.from_checkpoint(checkpoint)


@pytest.fixture(scope="module")
def ids_strategy(tokenizer):
    vocab = tokenizer.vocab_size
    # Tokens holding part of a UTF-8 character decode to U+FFFD on their own.
    partial = [i for i in range(vocab) if REPLACEMENT in tokenizer.decode([i])]
    special = sorted(tokenizer.tok.get_added_tokens_decoder())
    text = [tokenizer.encode(s) for s in ("naïve café — 東京 🎉🎉 ok", "ünïcödé ∑ 😀 </tool_call>", "stop here. STOP")]
    assert len(partial) > 100 and special
    token = st.one_of(
        st.integers(0, vocab - 1),
        st.sampled_from(partial),
        st.sampled_from(special),
        st.sampled_from([t for ids in text for t in ids]),
    )
    return st.lists(token, max_size=60) | st.sampled_from(text).flatmap(
        lambda ids: st.lists(st.sampled_from(partial), max_size=3).map(lambda extra: ids + extra)
    )


def reference(tokenizer: Tokenizer, ids: list[int], stop: list[str]) -> tuple[str, int | None]:
    """The old, quadratic way: decode everything after every token; cut at the first stop."""
    for n in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:n])
        for s in stop:
            if s in text:
                return text[: text.index(s)], n
    return tokenizer.decode(ids), None


def test_joined_pieces_equal_decoding_all_ids_at_once(tokenizer, ids_strategy):
    @SETTINGS
    @given(ids_strategy)
    def check(ids):
        out = TextOutput(tokenizer)
        for t in ids:
            assert not out.push(t)
            assert not out.text.endswith(REPLACEMENT)  # committed text never ends half-way through a character
        out.close()
        assert out.text == tokenizer.decode(ids)

    check()


def test_stop_strings_spanning_tokens_end_the_text_where_decoding_all_would(tokenizer, ids_strategy):
    @SETTINGS
    @given(ids_strategy, st.data())
    def check(ids, data):
        full = tokenizer.decode(ids)
        stop = []
        for _ in range(data.draw(st.integers(1, 3))):
            if full and data.draw(st.booleans()):  # a piece of the text, which often spans tokens
                a = data.draw(st.integers(0, len(full) - 1))
                stop.append(full[a : a + data.draw(st.integers(1, 6))])
            else:
                stop.append(data.draw(st.text(min_size=1, max_size=4)))
        expected, stop_at = reference(tokenizer, ids, stop)
        out = TextOutput(tokenizer, stop)
        streamed, stopped_at = "", None
        for n, t in enumerate(ids, 1):
            if out.push(t):
                stopped_at = n
                break
            streamed += out.stream_delta(finished=False)
            assert not any(s in streamed for s in stop)  # a stream never shows a stop string
        out.close()
        streamed += out.stream_delta(finished=True)
        assert (out.text, stopped_at) == (expected, stop_at)
        assert streamed == out.text
        if stopped_at is not None:
            assert out.stopped_by in stop and expected + out.stopped_by in tokenizer.decode(ids[:stopped_at])

    check()
