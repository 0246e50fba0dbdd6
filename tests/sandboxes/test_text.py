"""Command output as text: whatever the bytes, the model gets text with no raw control bytes."""

import re

from hypothesis import given
from hypothesis import strategies as st

from sandboxes.text import as_text, binary_note, is_binary

RAW = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


@given(st.binary(max_size=4000))
def test_any_bytes_become_text_without_raw_control_bytes(data):
    text = as_text(data)
    assert not RAW.search(text)
    text.encode("utf-8")  # no lone surrogates either


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\t\n\r")))
def test_text_is_kept_as_it_is(text):
    assert as_text(text.encode()) == text


def test_a_flood_of_nul_bytes_is_one_note():
    assert as_text(b"\0" * 9700) == binary_note(9700)
    assert as_text(b"before\n" + b"\0\xff" * 600 + b"\n" + b"\x01" * 50 + b"\nafter\n") == (
        "before\n" + binary_note(1200 + 1 + 51) + "after\n"
    )


def test_an_odd_byte_in_a_text_line_is_escaped():
    assert as_text(b"caf\xe9 \x1b[31mred\x1b[0m\x00\n") == "caf\\xe9 \\x1b[31mred\\x1b[0m\\x00\n"


def test_binary_is_what_is_not_utf8_or_holds_a_nul():
    assert is_binary(b"\x89PNG\r\n") and is_binary(b"a\0b") and not is_binary("héllo\n".encode())
