"""No import cycles between the project's modules.

The graph is grimp's (the one import-linter checks the layers on) over the root packages, built with
grimp's defaults: every import statement counts, those inside functions and those under
`if TYPE_CHECKING:` included, so a cycle cannot hide behind a lazy or a typing-only import.
A cycle is a strongly connected component of more than one module.
"""

from __future__ import annotations

import grimp

ROOTS = ("core", "engine", "sandboxes", "memory", "tools", "agent", "evals", "cli")


def import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*ROOTS, include_external_packages=False)
    return {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, by Tarjan's algorithm (the recursion is
    as deep as the longest import chain, far below Python's limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:  # `node` roots a component: it and everything above it on the stack
            at = stack.index(node)
            component, stack[at:] = stack[at:], []
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


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
