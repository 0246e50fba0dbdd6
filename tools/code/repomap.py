"""A repository map: the files that matter most for a focus, each with its definitions, cut to a budget.

Files are ranked by PageRank over the file graph, personalised to the focus (the files a search for it
ranks first, and the files it names), so the map shows those files and what they lean on and what
leans on them. Each file is shown as its skeleton: classes and functions with their headers and line
numbers, methods indented under their class (in a large file, only the methods the focus is about). Tokens are estimated at four characters each, the usual
rate for code, since the tools layer loads no tokenizer.
"""

from __future__ import annotations

import numpy as np

from tools.code import graph as file_graph
from tools.code.index import CodeIndex
from tools.code.rank import evidence, file_scores

CHARS_PER_TOKEN = 4
FOCUS_FILES = 10  # the files a focus search contributes to the personalisation
FOCUS_DEFINITIONS = 20  # the focus's best definitions: the methods a large file shows
SMALL_FILE = 30  # definitions: a file with more shows its methods only where the focus is about them


def render(index: CodeIndex, focus: str = "", budget: int = 1024) -> tuple[str, int, int]:
    """The map, the files it shows and the files the index has."""
    n = len(index.entries)
    if not n:
        return "", 0, 0
    relevant = np.zeros(len(index.symbols), bool)
    if focus.strip():
        ev = evidence(index, focus)
        scores = file_scores(ev)
        top = [int(i) for i in np.argsort(-scores, kind="stable")[:FOCUS_FILES] if scores[i] > 0]
        ranks = file_graph.pagerank(index.graph, {i: float(scores[i]) for i in top}) if top else index.rank
        # The focus's own files lead, in their search order; the graph orders the rest.
        ranks = ranks.copy()
        ranks[top] += 1.0 + np.linspace(1.0, 0.0, len(top))
        own = ev.parts + ev.named  # a definition's own match, its file's score aside
        relevant[[j for j in np.argsort(-own, kind="stable")[:FOCUS_DEFINITIONS] if own[j] > 0]] = True
    else:
        ranks = index.rank
    first = np.searchsorted(index.symbol_file, np.arange(n))  # each file's first definition
    room = budget * CHARS_PER_TOKEN
    out: list[str] = []
    for i in np.argsort(-ranks, kind="stable"):
        block = skeleton(index, int(i), relevant[first[i] : first[i] + len(index.entries[i].symbols)])
        if len(block) > room:
            if not out:  # the first file alone is larger than the budget: as much of it as fits
                out.append(block[: max(room, 0)].rsplit("\n", 1)[0])
            break
        out.append(block)
        room -= len(block) + 1
    return "\n".join(out), len(out), n


def skeleton(index: CodeIndex, i: int, relevant: np.ndarray) -> str:
    """A file's path, its top-level classes and functions, and the methods of its classes: all of them in a small
    file, in a large one those the focus is about (`relevant`, per definition of the file)."""
    entry = index.entries[i]
    small = len(entry.symbols) <= SMALL_FILE
    lines = [f"{entry.path}:"]
    for sym, wanted in zip(entry.symbols, relevant):
        depth = sym.parent.count(".") + 1 if sym.parent else 0
        if depth == 0 or (depth == 1 and (small or wanted)):  # functions inside methods are detail a map leaves out
            lines.append(f"{'    ' * (depth + 1)}{sym.header}  ({sym.line})")
    return "\n".join(lines)
