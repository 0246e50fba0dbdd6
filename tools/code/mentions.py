"""What an issue's text names of a repository: files by path, modules by dotted name, the frames of a
stack trace, and the code identifiers a person would only write when they mean a definition.

Each is matched against the index: a path by its longest suffix that names files, a dotted name by its
longest prefix that is a module, an identifier by the definitions of that name. A mention that fits
many files says little about each, so its weight is shared among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tools.code.index import CodeIndex
from tools.code.languages import LANGUAGES, WORDS_ONLY

_EXTENSIONS = "|".join(sorted({*LANGUAGES, *WORDS_ONLY}, key=len, reverse=True))
PATH = re.compile(rf"(?<![\w/.-])[./]*((?:[\w.-]+/)*[\w.-]+\.(?:{_EXTENSIONS}))(?![\w])")
FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([\w<>]+)')
DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
WORD = re.compile(r"\b[A-Za-z_]\w*\b")
PACKAGE = 0.3  # how surely naming a package (its __init__) names the file


def code_like(word: str) -> bool:
    """An identifier nobody writes in prose: snake_case, CamelCase, mixedCase, dunder."""
    inner = word.strip("_")
    return "_" in inner or (any(c.isupper() for c in inner[1:]) and any(c.islower() for c in inner))


@dataclass
class Mentions:
    files: dict[int, float] = field(default_factory=dict)  # file -> how surely the text names it
    frames: dict[int, float] = field(default_factory=dict)  # file -> weight of its frames (deeper: more)
    names: dict[str, float] = field(default_factory=dict)  # identifier -> how surely it is code
    qualified: set[tuple[str, str]] = field(default_factory=set)  # (owner, name) pairs like Model.save


def find(index: CodeIndex, text: str) -> Mentions:
    found = Mentions()
    suffixes = index.suffixes
    for m in PATH.finditer(text):
        _add_path(found.files, suffixes, m[1], 1.0)
    frames = FRAME.findall(text)
    for depth, (path, _, func) in enumerate(frames, start=1):
        files = _match(suffixes, path)
        for i in files:
            found.frames[i] = max(found.frames.get(i, 0.0), depth / len(frames) / len(files))
        if func.isidentifier():
            found.names[func] = max(found.names.get(func, 0.0), 0.5)
    for m in DOTTED.finditer(text):
        _add_dotted(index, found, m[0])
    spans = {w for span in CODE_SPAN.findall(text) for w in WORD.findall(span)}
    called = set(CALLED.findall(text))
    for word in set(WORD.findall(text)):
        if word in index.definitions:
            sure = 1.0 if code_like(word) else 0.7 if word in spans or word in called else 0.0
            if sure:
                found.names[word] = max(found.names.get(word, 0.0), sure)
    return found


def _add_dotted(index: CodeIndex, found: Mentions, dotted: str) -> None:
    parts = dotted.split(".")
    for n in range(len(parts), 1, -1):  # the longest prefix that is a module
        path = index.modules.get(".".join(parts[:n]))
        if path is not None:
            i = index.by_path[path]
            # A package's __init__ mostly gathers names defined elsewhere: naming the package names them.
            sure = PACKAGE if path.rsplit("/", 1)[-1].startswith("__init__.") else 1.0 if n == len(parts) else 0.8
            found.files[i] = max(found.files.get(i, 0.0), sure)
            break
    for owner, name in zip(parts, parts[1:]):
        if name in index.definitions:
            found.qualified.add((owner, name))
            found.names[name] = max(found.names.get(name, 0.0), 1.0 if code_like(name) or owner[0].isupper() else 0.7)


def _match(suffixes: dict[str, list[int]], path: str) -> list[int]:
    parts = path.replace("\\", "/").split("/")
    for k in range(len(parts)):  # the longest suffix that names a file of the repository
        files = suffixes.get("/".join(parts[k:]))
        if files:
            return files
    return []


def _add_path(files: dict[int, float], suffixes: dict[str, list[int]], path: str, weight: float) -> None:
    found = _match(suffixes, path)
    for i in found:
        files[i] = max(files.get(i, 0.0), weight / len(found))
