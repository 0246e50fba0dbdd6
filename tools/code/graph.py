"""The file graph: which files use what other files define, and import, ranked by PageRank.

An edge A -> B says A names something B defines (weighted by how few files define that name: a name
defined in one file points at it, `get` defined in forty points nowhere) or imports B. PageRank over
it ranks the files the rest of the repository leans on; personalised to a few files (the ones a query
or an issue is about), it ranks their neighbourhood, which is what a repository map shows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import networkx as nx
import numpy as np

from tools.code.entry import Entry
from tools.code.modules import imported

MAX_DEFINERS = 20  # a name defined in more files than this says nothing about which one is meant
IMPORT_WEIGHT = 1.0


def build(entries: Sequence[Entry], modules: Mapping[str, str]) -> nx.DiGraph:
    index = {e.path: i for i, e in enumerate(entries)}
    module_of = {path: m for m, path in modules.items()}
    definers: dict[str, set[int]] = defaultdict(set)
    for i, e in enumerate(entries):
        for sym in e.symbols:
            if not sym.name.startswith("__"):
                definers[sym.name].add(i)
    weights: dict[tuple[int, int], float] = defaultdict(float)
    for a, e in enumerate(entries):
        for name in e.uses:
            files = definers.get(name)
            if files and len(files) <= MAX_DEFINERS:
                share = 1.0 / len(files)
                for b in files:
                    if b != a:
                        weights[a, b] += share
        for module, names in e.imports:
            for path in imported(module, names, module_of.get(e.path), modules):
                target = index.get(path)
                if target is not None and target != a:
                    weights[a, target] += IMPORT_WEIGHT
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(entries)))
    graph.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    return graph


def pagerank(graph: nx.DiGraph, focus: Mapping[int, float] | None = None) -> np.ndarray:
    """Each file's rank (summing to 1); `focus`: file -> weight, to personalise it."""
    n = graph.number_of_nodes()
    if n == 0:
        return np.zeros(0)
    personal = {i: w for i, w in (focus or {}).items() if w > 0} or None
    try:
        ranks = nx.pagerank(graph, weight="weight", personalization=personal, max_iter=200, tol=1e-8)
    except nx.PowerIterationFailedConvergence:
        ranks = {i: 1.0 / n for i in range(n)}
    return np.array([ranks.get(i, 0.0) for i in range(n)])
