"""Ranking for an issue's text: what each kind of evidence does on a small repository."""

from __future__ import annotations

from tests.tools.code.repos import SHOP, as_files
from tools.code.index import build
from tools.code.rank import localize

INDEX = build(as_files(SHOP))


def top(text: str) -> str:
    return localize(INDEX, text, 5).files[0][0]


def test_words_of_the_prose_find_the_code_they_describe():
    assert top("Applying a discount rate gives the wrong total") == "shop/pricing.py"
    assert top("shipping cost for a heavy parcel by weight") == "shop/shipping.py"


def test_a_path_a_module_or_a_stack_frame_names_its_file():
    assert top("see util.py, the bound is wrong") == "shop/util.py"
    assert top("the helper in shop.util misbehaves") == "shop/util.py"
    trace = 'Traceback (most recent call last):\n  File "/site-packages/shop/util.py", line 2, in clamp\nValueError'
    assert top(f"Crash when ordering.\n{trace}") == "shop/util.py"


def test_a_named_definition_points_at_its_file_and_ranks_the_function():
    ranking = localize(INDEX, "parse_money fails on amounts with a comma", 5)
    assert ranking.files[0][0] == "shop/util.py"
    assert ranking.functions[0][0].qualname == "parse_money"
    ranking = localize(INDEX, "Cart.apply_discount can go below zero", 5)
    assert ranking.functions[0][0].qualname == "Cart.apply_discount"


def test_a_test_file_ranks_below_the_code_it_tests():
    files = [path for path, _ in localize(INDEX, "test apply discount Cart", 5).files]
    assert files.index("shop/pricing.py") < files.index("tests/test_pricing.py")


def test_scores_are_best_first_and_k_bounds_the_lists():
    ranking = localize(INDEX, "cart total discount shipping money", 2)
    assert len(ranking.files) == 2 and len(ranking.functions) == 2
    assert ranking.files[0][1] >= ranking.files[1][1] and ranking.functions[0][1] >= ranking.functions[1][1]


def test_a_text_with_nothing_of_the_repository_ranks_nothing():
    assert localize(INDEX, "zebra quokka", 5).files == []
