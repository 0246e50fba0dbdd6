"""The normaliser of volatile text: each kind of volatile part, and properties for all inputs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.volatile import normalise


@pytest.mark.parametrize(
    "a, b",
    [
        ("bash: line 4: slugify: command not found", "bash: line 7: slugify: command not found"),
        ('File "/tmp/tmpk2j3/app.py", line 12, in <module>', 'File "/tmp/tmpz9x1/app.py", line 40, in <module>'),
        ("app.py:12:5: E501 line too long", "app.py:30:1: E501 line too long"),
        ("started 2026-12-01T14:27:48.123Z", "started 2026-12-02T09:01:02Z"),
        ("at 14:27:48 the job ended", "at 09:01:02 the job ended"),
        ("<Thing object at 0x7f3a2b1c9d40>", "<Thing object at 0x7f00deadbeef>"),
        ("Ran 4 tests in 0.012s", "Ran 4 tests in 1.250s"),
        ("timed out after 30 seconds", "timed out after 31.5 seconds"),
        ("worker pid 4242 exited", "worker pid 977 exited"),
        ("[1] 12345", "[2] 678"),
        (
            "/var/folders/x1/T/pytest-of-me/pytest-3/test_a0/out.txt missing",
            "/var/folders/y2/T/pytest-of-me/pytest-9/test_a0/out.txt missing",
        ),
    ],
)
def test_texts_that_differ_only_in_volatile_parts_compare_equal(a, b):
    assert a != b and normalise(a) == normalise(b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("bash: slugify: command not found", "bash: slug: command not found"),
        ("1 failed, 3 passed", "2 failed, 2 passed"),
        ("exit code 1", "exit code 2"),
        ("echo 5 m", "echo 6 m"),
        ("sed -n '4,8p' app.py", "sed -n '9,12p' app.py"),
    ],
)
def test_what_matters_still_differs(a, b):
    assert normalise(a) != normalise(b)


@given(st.text())
def test_normalising_twice_changes_nothing_more(text):
    once = normalise(text)
    assert normalise(once) == once


@given(st.text(alphabet=st.characters(blacklist_categories=("Nd",), blacklist_characters="/")))
def test_text_without_digits_or_paths_is_left_alone(text):
    assert normalise(text) == text
