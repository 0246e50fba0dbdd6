"""A small repository whose hidden tests hold flaky coin tosses and a test on a set's order.

`parity.is_even(n)` is wrong for zero. The hidden test file holds the test of the fix, a stable
test, COINS tests that each fail half of the time (a byte of os.urandom; each run of the tests
is a fresh container, so nothing can carry a counter from one run to the next), and a test that
asserts the iteration order of a set of strings, which only the hash seed decides. Two records
share the repository: `coin-flaky` (the coins in PASS_TO_PASS) and `hash-order` (the set's order).
"""

from __future__ import annotations

from pathlib import Path

from tests.evals.swe.sizes_repo import git

REPO = "example/parity"
VERSION = "1.0"
COINS = 16
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo"]
# The order a set of WORDS iterates in: the hidden test compares it with the order under seed 0.
SET_ORDER = f"print(' '.join({{*{WORDS!r}}}))"

SOURCE = "def is_even(n: int) -> bool:\n    return n % 2 == 0 and n != 0\n"
FIX = ("    return n % 2 == 0 and n != 0\n", "    return n % 2 == 0\n")
BASE_TESTS = "from parity import is_even\n\n\ndef test_two():\n    assert is_even(2)\n"
HIDDEN = "tests/test_hidden.py"
FIXED = f"{HIDDEN}::test_zero"
STABLE = f"{HIDDEN}::test_three"
ORDER = f"{HIDDEN}::test_set_order"
COIN_IDS = [f"{HIDDEN}::test_coin[{i}]" for i in range(COINS)]
SPEC = {"python": "3.11", "test_cmd": "python -m pytest -rA -p no:cacheprovider"}


def hidden_tests(seed0_order: str) -> str:
    return f"""\
import os

import pytest

from parity import is_even


def test_zero():
    assert is_even(0)


def test_three():
    assert not is_even(3)


@pytest.mark.parametrize("i", range({COINS}))
def test_coin(i):
    assert os.urandom(1)[0] % 2 == 0


def test_set_order():
    assert " ".join({{*{WORDS!r}}}) == {seed0_order!r}
"""


def make_repo(repo: Path, seed0_order: str) -> tuple[str, str, str]:
    """The clone at its base commit; returns (base commit, gold patch, test patch)."""
    (repo / "parity").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "parity" / "__init__.py").write_text(SOURCE)
    (repo / "tests" / "test_parity.py").write_text(BASE_TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "parity 1.0")
    base = git(repo, "rev-parse", "HEAD").strip()
    init = repo / "parity" / "__init__.py"
    init.write_text(init.read_text().replace(*FIX))
    gold = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    (repo / HIDDEN).write_text(hidden_tests(seed0_order))
    git(repo, "add", "-A")
    tests = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard", base)
    return base, gold, tests


def records(base: str, gold: str, tests: str, source: str) -> list[dict]:
    common = {
        "repo": REPO,
        "base_commit": base,
        "patch": gold,
        "test_patch": tests,
        "problem_statement": "is_even(0) says False\n\nZero is even.",
        "version": VERSION,
        "FAIL_TO_PASS": [FIXED],
        "source": source,
    }
    return [
        {**common, "instance_id": "coin-flaky", "PASS_TO_PASS": [STABLE, *COIN_IDS]},
        {**common, "instance_id": "hash-order", "PASS_TO_PASS": [STABLE, ORDER]},
    ]
