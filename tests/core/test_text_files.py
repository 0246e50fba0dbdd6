"""Reading a user's file as text: its text, or one HarnessError naming the file and what to do."""

from __future__ import annotations

import pytest

from core.errors import HarnessError
from core.text_files import read_text_file


def test_utf8_text_is_read_as_it_is(tmp_path):
    (tmp_path / "t.md").write_bytes("naïve café\n".encode())
    assert read_text_file(tmp_path / "t.md", "task file") == "naïve café\n"


def test_a_bad_byte_is_named_with_its_offset_and_line(tmp_path):
    (tmp_path / "t.md").write_bytes(b"one\ntwo\nthr\xffee\n")
    with pytest.raises(HarnessError) as e:
        read_text_file(tmp_path / "t.md", "task file")
    assert str(e.value) == f"Task file {tmp_path}/t.md is not UTF-8: byte 0xff at offset 11 (line 3); save it as UTF-8."


def test_a_file_that_cannot_be_read_says_why_and_what_to_do(tmp_path):
    with pytest.raises(HarnessError) as e:
        read_text_file(tmp_path, "policy file", "Check the path, or use a preset name.")
    assert str(e.value) == f"Cannot read policy file {tmp_path}: Is a directory. Check the path, or use a preset name."
