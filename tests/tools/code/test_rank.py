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


def test_the_dense_half_is_off_by_default_and_any_embedder_plugs_in(monkeypatch):
    from dataclasses import replace

    import numpy as np

    from tools.code import dense
    from tools.code.rank import DEFAULT

    made = []

    class Shipping:  # an embedder that finds shipping in every text
        name = "shipping"

        def embed(self, texts):
            made.append(len(texts))
            return np.array(
                [[1.0, 0.0] if "shipping" in t.lower() else [0.0, 1.0] for t in texts] if texts else [[1.0, 0.0]]
            )

    monkeypatch.setitem(dense.EMBEDDERS, "shipping", Shipping)
    dense.embedder.cache_clear()
    index = build(as_files(SHOP))
    assert localize(index, "shipping", 1).files[0][0] == "shop/shipping.py" and made == []  # off: never asked
    only = replace(DEFAULT, content=0, skeleton=0, functions=0, paths=0, names=0, dense=1.0, embedder="shipping")
    assert localize(index, "about shipping", 1, only).files[0][0] == "shop/shipping.py"  # the embedder alone counts
    assert made == [len(index.entries), 1]  # the files once (then kept by the index), the text once


def test_wordllama_loads_from_its_own_package_without_the_network():
    import pytest

    pytest.importorskip("wordllama")
    import numpy as np

    from tools.code.dense import embedder

    vectors = embedder("wordllama").embed(
        ["bulk create in batches", "def bulk_create(self, objs, batch_size)", "matrix"]
    )
    assert vectors.shape == (3, 256) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
