"""Python module names of a repository's files, and the files an import statement names.

A file's module name follows its chain of package folders (folders holding an `__init__.py`), so
`lib/matplotlib/axes/_base.py` is `matplotlib.axes._base` and `src/_pytest/main.py` is `_pytest.main`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping


def module_names(paths: Iterable[str]) -> dict[str, str]:
    """Module name -> path, for every Python file."""
    paths = [p for p in paths if p.endswith((".py", ".pyi"))]
    packages = {posixpath.dirname(p) for p in paths if posixpath.basename(p) in ("__init__.py", "__init__.pyi")}
    out: dict[str, str] = {}
    for path in sorted(paths, key=lambda p: p.endswith(".pyi")):  # a .py wins over its stub
        folder, name = posixpath.split(path)
        chain = [] if name.startswith("__init__.") else [name.rsplit(".", 1)[0]]
        while folder in packages:
            folder, package = posixpath.split(folder)
            chain.append(package)
        if chain:
            out.setdefault(".".join(reversed(chain)), path)
    return out


def imported(module: str, names: tuple[str, ...], importer: str | None, modules: Mapping[str, str]) -> list[str]:
    """The files one import names: the module itself and any of `names` that is a module of its own.
    `importer`: the importing file's module name, which a relative import (`from ..x import y`) needs."""
    if module.startswith("."):
        if importer is None:
            return []
        level = len(module) - len(module.lstrip("."))
        base = importer.split(".")
        is_package = modules.get(importer, "").rsplit("/", 1)[-1].startswith("__init__.")
        base = base[: len(base) - level + (1 if is_package else 0)]
        module = ".".join([*base, module.lstrip(".")]) if module.lstrip(".") else ".".join(base)
    out = [modules[module]] if module in modules else []
    out += [modules[f"{module}.{n}"] for n in names if f"{module}.{n}" in modules]
    return out
