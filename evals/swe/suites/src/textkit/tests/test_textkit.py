import pytest

from textkit import slugify, title_case, truncate, wrap


def test_title_case_small_words():
    assert title_case("the lord of the rings") == "The Lord of the Rings"
    assert title_case("iPhone in the wild") == "iPhone in the Wild"


def test_slugify_basic():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Crème Brûlée", sep="_") == "creme_brulee"


def test_truncate_keeps_short_text():
    assert truncate("short", 10) == "short"
    with pytest.raises(ValueError):
        truncate("x", 0)


def test_wrap():
    assert wrap("the quick brown fox", 10) == ["the quick", "brown fox"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
