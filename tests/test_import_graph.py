"""No import cycles between the project's modules, nor between the folders of a package.

The graph is grimp's (the one import-linter checks the layers on) over the root packages, built with
grimp's defaults: every import statement counts, those inside functions and those under
`if TYPE_CHECKING:` included, so a cycle cannot hide behind a lazy or a typing-only import.
A cycle is a strongly connected component of more than one module (or folder).

A folder is a package with the modules directly in it (`agent.loop` is in the folder `agent`,
`agent.journal.store` in `agent.journal`). Folders that import each other both ways do not read as
layers: inside `agent/`, the recorded runs sit on the loop, the loop on the recovery, the recovery on
the journal, the journal on the run's values and the model clients (pyproject.toml names that order).
"""

from __future__ import annotations

import grimp
import networkx

ROOTS = ("core", "engine", "sandboxes", "memory", "tools", "agent", "evals", "cli")
# The engine's backends (cpu/, cuda/) and its shared parts call each other by design: one model, three devices.
FOLDER_LAYERED = tuple(r for r in ROOTS if r != "engine")


def import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*ROOTS, include_external_packages=False)
    return {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module."""
    components = networkx.strongly_connected_components(networkx.DiGraph([(m, t) for m in graph for t in graph[m]]))
    return sorted(sorted(c) for c in components if len(c) > 1)


def folders(graph: dict[str, set[str]], root: str) -> dict[str, str]:
    """Each module of `root` -> its folder: a package is its own folder, a plain module its package's."""
    inside = [m for m in graph if m == root or m.startswith(root + ".")]
    packages = {m.rpartition(".")[0] for m in inside if "." in m} | {root}
    return {m: m if m in packages else m.rpartition(".")[0] for m in inside}


def folder_graph(graph: dict[str, set[str]], folder: dict[str, str]) -> dict[str, set[str]]:
    """Which folders import which (from the modules `folder` places), a folder's own imports left out."""
    edges: dict[str, set[str]] = {f: set() for f in folder.values()}
    for m, f in folder.items():
        edges[f] |= {folder[t] for t in graph[m] if t in folder} - {f}
    return edges


def test_cycles_finds_each_component_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"f"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]


def test_folders_are_packages_with_their_modules():
    graph = {"a": set(), "a.x": {"a.b.y"}, "a.b": set(), "a.b.y": {"a.c.z", "a.x"}, "a.c": set(), "a.c.z": {"q"}}
    folder = folders(graph, "a")
    assert folder == {"a": "a", "a.x": "a", "a.b": "a.b", "a.b.y": "a.b", "a.c": "a.c", "a.c.z": "a.c"}
    assert folder_graph(graph, folder) == {"a": {"a.b"}, "a.b": {"a", "a.c"}, "a.c": set()}
    assert cycles(folder_graph(graph, folder)) == [["a", "a.b"]]


def test_no_module_imports_itself_back():
    graph = import_graph()
    found = cycles(graph)
    lines = []
    for component in found:
        members = set(component)
        lines.append(" <-> ".join(component))
        lines += [f"    {m} imports {t}" for m in component for t in sorted(graph[m] & members)]
    assert not found, "import cycles:\n" + "\n".join(lines)


def test_no_folder_imports_a_folder_that_imports_it_back():
    graph = import_graph()
    lines = []
    for root in FOLDER_LAYERED:
        folder = folders(graph, root)
        for component in cycles(folder_graph(graph, folder)):
            members = set(component)
            lines.append(" <-> ".join(component))
            lines += [
                f"    {m} imports {t}"
                for m in sorted(folder)
                for t in sorted(graph[m])
                if folder[m] in members and folder.get(t) in members and folder[t] != folder[m]
            ]
    assert not lines, "folders that import each other both ways (move what both need lower down):\n" + "\n".join(lines)
