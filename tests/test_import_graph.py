"""No import cycles between the project's modules.

The graph is grimp's (the one import-linter checks the layers on) over the root packages, built with
grimp's defaults: every import statement counts, those inside functions and those under
`if TYPE_CHECKING:` included, so a cycle cannot hide behind a lazy or a typing-only import.
A cycle is a strongly connected component of more than one module.
"""

from __future__ import annotations

import grimp
import networkx

ROOTS = ("core", "engine", "sandboxes", "memory", "tools", "agent", "evals", "cli")


def import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*ROOTS, include_external_packages=False)
    return {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module."""
    components = networkx.strongly_connected_components(networkx.DiGraph([(m, t) for m in graph for t in graph[m]]))
    return sorted(sorted(c) for c in components if len(c) > 1)


def test_cycles_finds_each_component_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"f"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]


def test_no_module_imports_itself_back():
    graph = import_graph()
    found = cycles(graph)
    lines = []
    for component in found:
        members = set(component)
        lines.append(" <-> ".join(component))
        lines += [f"    {m} imports {t}" for m in component for t in sorted(graph[m] & members)]
    assert not found, "import cycles:\n" + "\n".join(lines)
