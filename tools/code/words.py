"""Words as the code index sees them, in source and in an issue alike.

An identifier counts as its parts, split on underscores, case changes and digits (`getSearchResults`,
`get_search_results` -> get, search, result), each stemmed so that prose finds code ("deleting" finds
`delete`), and as itself when it has several parts, so that an exact name still outranks its parts.
"""

from __future__ import annotations

import re
from collections import Counter

import Stemmer

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STEM = Stemmer.Stemmer("english").stemWord

# English function words and the keywords and names that every Python file repeats: they tell files apart
# no better than chance, and a long issue is full of them.
STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each else few for from further get got had has
    have having he her here hers him his how i if in into is it its itself just let like may me might more most
    must my no nor not now of off on once only or other our out over own same see seem she should so some such
    than that the their them then there these they this those through to too under until up us use used using
    very want was way we well were what when where which while who whom why will with would yet you your
    def class self cls return import none true false elif pass lambda yield try except finally raise assert
    global nonlocal del with async await print args kwargs py""".split()
)
MAX_COUNT = 16  # one word's count in one document: past this BM25's saturation makes repeats worthless


def split(identifier: str) -> list[str]:
    """The index words of one identifier: its stemmed parts and, when it has several, itself in lower case."""
    parts = [p.lower() for p in _PARTS.findall(identifier)]
    out = [_STEM(p) for p in parts if len(p) > 1 and p not in STOP and not p.isdigit()]
    if len(parts) > 1:
        out.append(identifier.lower())
    return out


def identifiers(text: str) -> Counter[str]:
    return Counter(IDENTIFIER.findall(text))


def path_parts(path: str) -> list[str]:
    """A path's folders and file name (extension dropped), each read as an identifier."""
    name = path.rsplit("/", 1)[-1]
    stem = path.rsplit(".", 1)[0] if "." in name[1:] else path
    return [p for p in stem.split("/") if p]


class Vocabulary:
    """Word -> id for one repository's indexes, growing as files bring new words; it remembers each
    identifier's word ids, since a repository repeats the same identifiers in every file."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self._of: dict[str, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def get(self, word: str) -> int | None:
        return self.ids.get(word)

    def of(self, identifier: str) -> tuple[int, ...]:
        found = self._of.get(identifier)
        if found is None:
            ids = self.ids
            found = self._of[identifier] = tuple(ids.setdefault(w, len(ids)) for w in split(identifier))
        return found

    def __getstate__(self) -> dict:
        return {"ids": self.ids}  # the identifier memo is rebuilt as it is used

    def __setstate__(self, state: dict) -> None:
        self.ids, self._of = state["ids"], {}
