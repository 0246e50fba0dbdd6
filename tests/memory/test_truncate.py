import re

from hypothesis import given
from hypothesis import strategies as st

from core.context_policy import Limits
from memory.tokens import TokenCounter
from memory.truncate import cut_to_tokens, head_tail


@given(st.text(), st.integers(0, 300), st.integers(0, 300))
def test_head_and_tail_are_kept_exactly(text, head, tail):
    shown, cut = head_tail(text, Limits(head_chars=head, tail_chars=tail), "artifacts/x.txt")
    if len(text) <= head + tail:
        assert shown == text and not cut
    else:
        assert cut and shown.startswith(text[:head]) and shown.endswith(text[len(text) - tail :])
        assert f"[... {len(text) - head - tail} characters" in shown and "artifacts/x.txt" in shown


# Words, runs of spaces and single other characters, each a token: a tokenizer whose count is not monotonic in the
# characters kept (cutting a word in two adds a token), as a real BPE's is not.
WORDS = TokenCounter(lambda text: [0] * len(re.findall(r"\w+|\s+|[^\w\s]", text)), "words")


# Without "[", the notice is the only "[..." in what is shown, so where it sits is plain.
@given(
    st.text(st.characters(exclude_characters="["), max_size=400),
    st.integers(0, 200),
    st.none() | st.just("artifacts/step00001-c1.txt"),
)
def test_a_cut_to_tokens_fits_keeps_both_ends_and_is_final(text, tokens, artifact):
    shown = cut_to_tokens(text, tokens, WORDS, artifact)
    if len(WORDS.encode(text)) <= tokens:
        assert shown == text
        return
    bare = head_tail(text, Limits(head_chars=0, tail_chars=0), artifact)[0]
    if len(WORDS.encode(bare)) > tokens:  # not even the notice fits: the notice alone is the least it shows
        assert shown == bare
        return
    assert len(WORDS.encode(shown)) <= tokens
    head, _, tail = shown.partition(notice_of(shown))
    assert text.startswith(head) and text.endswith(tail) and len(head) + len(tail) < len(text)
    assert cut_to_tokens(shown, tokens, WORDS, artifact) == shown  # cut once: a second cut changes nothing


def notice_of(shown: str) -> str:
    return shown[shown.index("\n[... ") : shown.index(" ...]\n") + len(" ...]\n")]
