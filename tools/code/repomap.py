"""A repository map: the files that matter most for a focus, each with its definitions, cut to a budget.

Files are ranked by PageRank over the file graph, personalised to the focus (the files a search for it
ranks first, and the files it names), so the map shows those files and what they lean on and what
leans on them. Each file is shown as its skeleton: classes and functions with their headers and line
numbers, methods indented under their class. Tokens are estimated at four characters each, the usual
rate for code, since the tools layer loads no tokenizer.
"""

from __future__ import annotations

import numpy as np

from tools.code import graph as file_graph
from tools.code.index import CodeIndex
from tools.code.rank import evidence, file_scores

CHARS_PER_TOKEN = 4
FOCUS_FILES = 10  # the files a focus search contributes to the personalisation


def ranked_files(index: CodeIndex, focus: str) -> list[int]:
    n = len(index.entries)
    if not n:
        return []
    if not focus.strip():
        ranks = index.rank
    else:
        scores = file_scores(evidence(index, focus))
        top = [int(i) for i in np.argsort(-scores, kind="stable")[:FOCUS_FILES] if scores[i] > 0]
        personal = {i: float(scores[i]) for i in top}
        ranks = file_graph.pagerank(index.graph, personal) if personal else index.rank
        # The focus's own files lead, in their search order; the graph orders the rest.
        bonus = np.zeros(n)
        bonus[top] = 1.0 + np.linspace(1.0, 0.0, len(top))
        ranks = ranks + bonus
    return [int(i) for i in np.argsort(-ranks, kind="stable")]


def render(index: CodeIndex, focus: str = "", budget: int = 1024) -> tuple[str, int, int]:
    """The map, the files it shows and the files the index has."""
    room = budget * CHARS_PER_TOKEN
    out: list[str] = []
    shown = 0
    for i in ranked_files(index, focus):
        block = skeleton(index, i)
        if len(block) > room:
            if not out:  # the first file alone is larger than the budget: as much of it as fits
                out.append(block[: max(room, 0)].rsplit("\n", 1)[0])
                shown = 1
            break
        out.append(block)
        room -= len(block) + 1
        shown += 1
    return "\n".join(out), shown, len(index.entries)


def skeleton(index: CodeIndex, i: int) -> str:
    entry = index.entries[i]
    lines = [f"{entry.path}:"]
    for sym in entry.symbols:
        depth = sym.parent.count(".") + 1 if sym.parent else 0
        if depth > 1:  # functions inside methods are detail a map leaves out
            continue
        lines.append(f"{'    ' * (depth + 1)}{sym.header}  ({sym.line})")
    return "\n".join(lines)
