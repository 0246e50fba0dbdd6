"""A small repository made for the tests, and its bug described as published SWE-bench records.

`sizes.naturalsize(1)` says "1 Bytes". The hidden tests are parametrised with ids holding
spaces, brackets, colons and unicode (pytest's id escaping is off, so they stay unicode), and
one very long id. Installing the package writes files (egg-info, a regenerated _version.py)
that must never reach an agent's patch.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

INSTANCE_ID = "sizes@1.0.1:singular-byte"  # any string; not owner__repo-N
REPO = "example/sizes"
VERSION = "1.0"
LONG = "a very long parametrised id " + "with many words " * 12 + "and a colon: the end"

SOURCE = """\
from sizes._version import __version__

UNITS = ["kB", "MB", "GB"]


def naturalsize(n: int) -> str:
    if n < 1024:
        return f"{n} Bytes"
    value = float(n)
    for unit in UNITS:
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value:.1f} TB"
"""
FIX = ('        return f"{n} Bytes"\n', '        return "1 Byte" if n == 1 else f"{n} Bytes"\n')

BASE_TESTS = """\
from sizes import naturalsize


def test_kilobytes():
    assert naturalsize(2048) == "2.0 kB"


class TestLarge:
    def test_megabytes(self):
        assert naturalsize(3 * 1024 * 1024) == "3.0 MB"
"""

HIDDEN_TESTS = f"""\
import pytest

from sizes import naturalsize


@pytest.mark.parametrize(
    "n, expected",
    [(1, "1 Byte"), (2, "2 Bytes"), (1536, "1.5 kB"), (0, "0 Bytes")],
    ids=["1 Byte", "2 Bytes [plural]", "größe: 1.5 kB ✓", {LONG!r}],
)
def test_naturalsize(n, expected):
    assert naturalsize(n) == expected


class TestUnits:
    def test_megabytes(self):
        assert naturalsize(3 * 1024 * 1024) == "3.0 MB"
"""

PYTEST_INI = "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
SETUP_PY = "from setuptools import setup\n\nsetup(name='sizes', version='1.0.0', packages=['sizes'])\n"

HIDDEN = "tests/test_naturalsize.py"
FAIL_TO_PASS = [f"{HIDDEN}::test_naturalsize[1 Byte]"]
PASS_TO_PASS = [
    f"{HIDDEN}::test_naturalsize[2 Bytes [plural]]",
    f"{HIDDEN}::test_naturalsize[größe: 1.5 kB ✓]",
    f"{HIDDEN}::test_naturalsize[{LONG}]",
    f"{HIDDEN}::TestUnits::test_megabytes",
]
# The classic environment: installing writes egg-info and regenerates a tracked file.
SPEC = {
    "python": "3.11",
    "install": "pip install --no-build-isolation --no-deps -e . && echo '__version__ = \"1.0.1.post0\"' > sizes/_version.py",
    "test_cmd": "python -m pytest -rA -p no:cacheprovider",
    "env": {"SIZES_TESTING": "1"},
}

GIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT}, check=True, capture_output=True, text=True
    ).stdout


def make_repo(repo: Path) -> tuple[str, str, str]:
    """The clone at its base commit; returns (base commit, gold patch, test patch)."""
    (repo / "sizes").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "sizes" / "__init__.py").write_text(SOURCE)
    (repo / "sizes" / "_version.py").write_text('__version__ = "1.0.1"\n')
    (repo / "tests" / "test_sizes.py").write_text(BASE_TESTS)
    (repo / "pytest.ini").write_text(PYTEST_INI)
    (repo / "setup.py").write_text(SETUP_PY)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sizes 1.0.1")
    base = git(repo, "rev-parse", "HEAD").strip()
    init = repo / "sizes" / "__init__.py"
    init.write_text(init.read_text().replace(*FIX))
    gold = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    (repo / HIDDEN).write_text(HIDDEN_TESTS)
    git(repo, "add", "-A")
    tests = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard", base)
    return base, gold, tests


def classic_record(base: str, gold: str, tests: str) -> dict:
    """The record as SWE-bench publishes it: JSON-encoded test lists, no environment inside."""
    return {
        "repo": REPO,
        "instance_id": INSTANCE_ID,
        "base_commit": base,
        "patch": gold,
        "test_patch": tests,
        "problem_statement": "naturalsize(1) says '1 Bytes'\n\nOne byte is singular: it should say '1 Byte'.",
        "hints_text": "",
        "created_at": "2024-01-02T00:00:00Z",
        "version": VERSION,
        "FAIL_TO_PASS": json.dumps(FAIL_TO_PASS),
        "PASS_TO_PASS": json.dumps(PASS_TO_PASS),
        "environment_setup_commit": base,
    }


def eval_script(base: str, tests: str) -> str:
    """An eval script shaped as swebench 5.x writes them (`: '>>>>> ...'` markers, heredoc test patch)."""
    return (
        "\n".join(
            [
                "#!/bin/bash",
                "set -uxo pipefail",
                "cd /testbed",
                f"git checkout {base} {HIDDEN}",
                "git apply -v - <<'EOF_114329324912'",
                tests.rstrip("\n"),
                "EOF_114329324912",
                ": '>>>>> Start Test Output'",
                f"python -m pytest -rA -p no:cacheprovider {HIDDEN}",
                ": '>>>>> End Test Output'",
                f"git checkout {base} {HIDDEN}",
            ]
        )
        + "\n"
    )


def cut(test_id: str) -> str:
    """A test id as the official pytest parser records it: cut at the first space."""
    return test_id.split()[0]


def self_contained_record(base: str, gold: str, tests: str, image: str) -> dict:
    """The same bug in the self-contained form, its test ids cut as datasets built by the official parser hold them."""
    record = classic_record(base, gold, tests)
    record.update(
        instance_id="sizes-selfcontained",
        image=image,
        eval_script=eval_script(base, tests),
        log_parser="parse_log_pytest",
        eval_type="pass_and_fail",
        FAIL_TO_PASS=json.dumps([cut(t) for t in FAIL_TO_PASS]),
        PASS_TO_PASS=json.dumps([cut(t) for t in PASS_TO_PASS]),
    )
    return record
