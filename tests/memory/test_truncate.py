from hypothesis import given
from hypothesis import strategies as st

from core.context_policy import Limits
from memory.truncate import head_tail


@given(st.text(), st.integers(0, 300), st.integers(0, 300))
def test_head_and_tail_are_kept_exactly(text, head, tail):
    shown, cut = head_tail(text, Limits(head_chars=head, tail_chars=tail), "artifacts/x.txt")
    if len(text) <= head + tail:
        assert shown == text and not cut
    else:
        assert cut and shown.startswith(text[:head]) and shown.endswith(text[len(text) - tail :])
        assert f"[... {len(text) - head - tail} characters" in shown and "artifacts/x.txt" in shown
