"""YAML and TOML documents for property tests of the readers of a user's files: data built from the fields a reader
knows, dumped, then spliced with what makes parsers stumble (impossible dates, wrong explicit tags, aliases, deep
nesting, stray syntax)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from hypothesis import strategies as st

from core.errors import HarnessError

T = TypeVar("T")

YAML_TROUBLE = [
    "2001-02-30",
    "2001-02-03",
    "2001-13-01 10:00:00",
    "!!int x",
    "!!float y",
    "!!bool maybe",
    "!!binary 1",
    "!!timestamp 7",
    "!!set {a: 1}",
    "!!omap [a]",
    "&a [*a]",
    "*a",
    "<<: 5",
    "? [1]\n: 2",
    "- ",
    ": ",
    "{",
    "[",
    "\t",
    "|\n",
    "'",
    '"\\x"',
    '"\\ud800"',
    '"\\udcff"',
    "---\n",
    "%YAML 9.9\n",
    "\n",
    "[" * 1000,
    "{a: " * 1000,
    ".nan",
    "1e999",
    "~",
]
TOML_TROUBLE = [
    "1979-02-30",
    "1979-02-28T25:00:00",
    "[a]\n",
    "[[a]]\n",
    "a.b = 1\n",
    "x = ",
    "{",
    "[",
    '"',
    "nan",
    "inf",
    "1e999",
    "= 1\n",
    "\n",
    "a = " + "[" * 1000,
    "a = " + "{b = " * 1000,
    "0x",
    "true",
]


def values(words: list[str]) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=10),
        st.sampled_from(words),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(words), inner, max_size=3),
        max_leaves=10,
    )


def spliced(text: str, trouble: list[str]) -> st.SearchStrategy[str]:
    """`text` with up to three of `trouble` put in at any places."""
    splice = st.tuples(st.integers(0, len(text)), st.sampled_from(trouble))

    def apply(cuts: list[tuple[int, str]]) -> str:
        out = text
        for at, piece in sorted(cuts, reverse=True):
            out = out[:at] + piece + out[at:]
        return out

    return st.lists(splice, max_size=3).map(apply)


def yaml_texts(words: list[str]) -> st.SearchStrategy[str]:
    mapping = st.dictionaries(st.sampled_from(words), values(words), max_size=6)
    data = mapping | st.lists(mapping, max_size=4)
    return data.map(lambda d: yaml.safe_dump(d, sort_keys=False)).flatmap(lambda t: spliced(t, YAML_TROUBLE))


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # nan and inf as TOML writes them
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items() if v is not None) + "}"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def toml_texts(words: list[str]) -> st.SearchStrategy[str]:
    pairs = st.dictionaries(st.sampled_from(words), values(words).filter(lambda v: v is not None), max_size=6)
    text = pairs.map(lambda d: "".join(f'"{k}" = {toml_value(v)}\n' for k, v in d.items()))
    return text.flatmap(lambda t: spliced(t, TOML_TROUBLE))


def read_or_refused(text: str, name: str, read: Callable[[Path], T]) -> T | None:
    """What `read` makes of a file `name` holding `text`; None when it refused it, as it must: with a HarnessError
    that says something."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(text)
        try:
            return read(path)
        except HarnessError as e:
            assert str(e) and "Traceback" not in str(e)
            return None
