"""The file graph: which files use what other files define, and import, ranked by PageRank.

An edge A -> B says A names something B defines (weighted by how few files define that name: a name
defined in one file points at it, `get` defined in forty points nowhere) or imports B. Each file keeps its
MAX_EDGES strongest edges, which hold nearly all of the weight and keep the graph of a large repository
small. PageRank over it ranks the files the rest of the repository leans on; personalised to a few files
(the ones a query or an issue is about), it ranks their neighbourhood, which is what a repository map shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx
import numpy as np
from scipy import sparse

from tools.code.entry import Entry
from tools.code.modules import imported

MAX_DEFINERS = 20  # a name defined in more files than this says nothing about which one is meant
MAX_EDGES = 20  # of each file, its strongest edges
MIN_NAME = 3  # shorter names (a minified file's, a format's one-letter methods) are anyone's
IMPORT_WEIGHT = 1.0


def build(entries: Sequence[Entry], modules: Mapping[str, str]) -> nx.DiGraph:
    n = len(entries)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    if n == 0:
        return graph
    weights = _uses(entries) + _imports(entries, modules)
    weights.setdiag(0)
    weights = weights.tocsr()
    weights.eliminate_zeros()
    rows, cols, vals = [], [], []
    for a in range(n):
        start, end = weights.indptr[a], weights.indptr[a + 1]
        keep = np.argsort(-weights.data[start:end])[:MAX_EDGES] + start
        rows.append(np.full(len(keep), a))
        cols.append(weights.indices[keep])
        vals.append(weights.data[keep])
    graph.add_weighted_edges_from(
        zip(np.concatenate(rows).tolist(), np.concatenate(cols).tolist(), np.concatenate(vals).tolist())
    )
    return graph


def _uses(entries: Sequence[Entry]) -> sparse.csr_matrix:
    """files x files: how much each file uses what each other defines (files x names @ names x definers)."""
    definers: dict[str, set[int]] = {}
    for i, e in enumerate(entries):
        for sym in e.symbols:
            if len(sym.name) >= MIN_NAME and not sym.name.startswith("__"):
                definers.setdefault(sym.name, set()).add(i)
    names = {name: k for k, (name, files) in enumerate(definers.items()) if len(files) <= MAX_DEFINERS}
    use_rows, use_cols = [], []
    for a, e in enumerate(entries):
        found = [names[u] for u in e.uses if u in names]
        use_rows += [a] * len(found)
        use_cols += found
    n, m = len(entries), len(definers)
    uses = sparse.csr_matrix((np.ones(len(use_rows)), (use_rows, use_cols)), shape=(n, m))
    def_rows, def_cols, def_vals = [], [], []
    for name, k in names.items():
        files = definers[name]
        def_rows += [k] * len(files)
        def_cols += list(files)
        def_vals += [1.0 / len(files)] * len(files)
    defined = sparse.csr_matrix((def_vals, (def_rows, def_cols)), shape=(m, n))
    return (uses @ defined).tocsr()


def _imports(entries: Sequence[Entry], modules: Mapping[str, str]) -> sparse.csr_matrix:
    index = {e.path: i for i, e in enumerate(entries)}
    module_of = {path: m for m, path in modules.items()}
    rows, cols = [], []
    for a, e in enumerate(entries):
        for module, names in e.imports:
            for path in imported(module, names, module_of.get(e.path), modules):
                b = index.get(path)
                if b is not None:
                    rows.append(a)
                    cols.append(b)
    n = len(entries)
    return sparse.csr_matrix((np.full(len(rows), IMPORT_WEIGHT), (rows, cols)), shape=(n, n))


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
