"""The code index: words, definitions, skeletons, incremental builds, and the files it leaves out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.tools.code.repos import SHOP, as_files
from tools.code.index import build
from tools.code.languages import MAX_FILE_BYTES
from tools.code.modules import imported, module_names
from tools.code.rank import localize
from tools.code.words import STOP, split


def test_identifiers_split_on_case_underscores_and_digits_and_keep_themselves():
    assert "get" in STOP and split("get_search_results") == ["search", "result", "get_search_results"]
    assert "search" in split("getSearchResults") and "result" in split("getSearchResults")
    assert split("getSearchResults")[-1] == "getsearchresults"
    assert split("HTTPResponse")[:2] == ["http", "respons"]
    assert split("parse") == ["pars"]  # one part: its stem alone


@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True))
def test_every_word_of_an_identifier_is_lower_case_and_the_identifier_counts_once(identifier):
    words = split(identifier)
    assert all(w == w.lower() and w for w in words)
    assert words.count(identifier.lower()) <= 1


def test_definitions_carry_kind_lines_parent_header_and_docstring():
    index = build(as_files(SHOP))
    cart = index.entry("shop/pricing.py")
    assert cart is not None
    by_name = {s.name: s for s in cart.symbols}
    assert (
        by_name["Cart"].kind == "class" and by_name["Cart"].line == 4 and by_name["Cart"].doc.startswith("A shopping")
    )
    discount = by_name["apply_discount"]
    assert (discount.kind, discount.parent, discount.qualname) == ("method", "Cart", "Cart.apply_discount")
    assert (discount.line, discount.end) == (10, 12)
    assert discount.header == "def apply_discount(self, total, rate):"
    assert index.definitions["clamp"] and index.symbols[index.definitions["clamp"][0]].path == "shop/util.py"


def test_an_unchanged_file_keeps_its_entry_and_a_changed_one_is_read_again():
    first = build(as_files(SHOP))
    edited = dict(SHOP, **{"shop/util.py": "def clamp(x, lo, hi):\n    return x\n"})
    second = build(as_files(edited), previous=first)
    assert second.entry("shop/pricing.py") is first.entry("shop/pricing.py")
    assert second.entry("shop/util.py") is not first.entry("shop/util.py")
    assert "parse_money" not in second.definitions
    # An update names only what changed; the rest stays.
    third = build([("shop/extra.py", b"def surcharge():\n    pass\n"), ("setup.cfg", None)], previous=second, keep=True)
    assert "surcharge" in third.definitions and third.entry("setup.cfg") is None
    assert third.entry("shop/pricing.py") is first.entry("shop/pricing.py")


def test_binary_large_and_non_utf8_files():
    files = as_files(SHOP) + [
        ("shop/blob.py", b"\x00\x01binary"),
        ("shop/huge.py", b"x = 1\n" * (MAX_FILE_BYTES // 6 + 1)),
        ("shop/latin.py", "def façade_width():\n    return 'größe'\n".encode("latin-1")),
    ]
    index = build(files)
    assert index.skipped.binary == ["shop/blob.py"] and index.skipped.too_large == ["shop/huge.py"]
    latin = index.entry("shop/latin.py")
    assert latin is not None and latin.replaced and "\ufffd" in latin.text
    assert localize(index, "the width of the facade", 3).files[0][0] == "shop/latin.py"


def test_an_empty_repository_gives_an_empty_index_and_empty_rankings():
    index = build([])
    assert index.entries == [] and localize(index, "anything at all", 5).files == []
    assert localize(index, "anything", 5).functions == []


def test_python_modules_and_their_imports_resolve_to_files():
    modules = module_names(["lib/pkg/__init__.py", "lib/pkg/core.py", "lib/pkg/sub/__init__.py", "lib/pkg/sub/x.py"])
    assert modules == {
        "pkg": "lib/pkg/__init__.py",
        "pkg.core": "lib/pkg/core.py",
        "pkg.sub": "lib/pkg/sub/__init__.py",
        "pkg.sub.x": "lib/pkg/sub/x.py",
    }
    assert imported("..core", ("thing",), "pkg.sub.x", modules) == ["lib/pkg/core.py"]
    assert imported("pkg.sub", ("x",), "pkg.core", modules) == ["lib/pkg/sub/__init__.py", "lib/pkg/sub/x.py"]


def test_other_languages_have_their_definitions():
    index = build(
        [
            ("web/app.js", b"class Router {\n  route(path) { return path; }\n}\nfunction start() {}\n"),
            ("cmd/main.go", b"package main\n\ntype Server struct{}\n\nfunc (s *Server) Serve() {}\n"),
            ("src/lib.rs", b"struct Cache;\nfn evict() {}\n"),
        ]
    )
    assert {(s.name, s.kind) for s in index.symbols} >= {
        ("Router", "class"),
        ("route", "method"),
        ("start", "function"),
        ("Server", "class"),
        ("Serve", "function"),
        ("Cache", "class"),
        ("evict", "function"),
    }
