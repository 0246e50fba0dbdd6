"""Definitions, imports and references of one source file, from tree-sitter.

A definition knows its name, kind (class, function, method), lines, the class or function it sits in,
its header and the first line of its docstring; that is a file's skeleton, and the unit the index ranks
functions by. References are found on demand (`references`), since only `find_symbol` needs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor
from tree_sitter_language_pack import get_language, get_parser

from tools.code.languages import QUERIES

MAX_HEADER = 200  # characters of a definition's header kept for skeletons and results
_SPACE = re.compile(r"\s+")
_IMPORT = re.compile(r"^\s*from\s+(\.*[\w.]*)\s+import\s+(.+)$|^\s*import\s+(.+)$", re.S)
# The node kinds that name something, in whichever grammars have them.
_NAME_KINDS = ("identifier", "type_identifier", "field_identifier", "property_identifier", "constant", "name")


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    kind: str  # class | function | method
    path: str
    line: int  # first line, 1-based
    end: int  # last line
    parent: str  # the enclosing definitions' names joined with ".", "" at module level
    header: str  # the definition's first line(s) up to its body, whitespace collapsed
    doc: str  # the first line of its docstring (Python), else ""

    @property
    def qualname(self) -> str:
        return f"{self.parent}.{self.name}" if self.parent else self.name


@dataclass(frozen=True, slots=True)
class Parsed:
    symbols: tuple[Symbol, ...]
    imports: tuple[tuple[str, tuple[str, ...]], ...]  # (module as written, names imported from it)


@cache
def _tools(lang: str) -> tuple[Parser, Query, Language]:
    language = get_language(lang)  # type: ignore[arg-type]
    query = QUERIES[lang] + (" (import_statement) @import (import_from_statement) @import" if lang == "python" else "")
    return get_parser(lang), Query(language, query), language  # type: ignore[arg-type]


def parse(path: str, data: bytes, lang: str) -> Parsed:
    parser, query, _ = _tools(lang)
    root = parser.parse(data).root_node
    found: list[tuple[Node, Node, str]] = []  # (definition, its name, kind)
    imports: list[tuple[str, tuple[str, ...]]] = []
    for _, caps in QueryCursor(query).matches(root):
        if "import" in caps:
            imports.extend(_imports(_text(data, caps["import"][0])))
            continue
        kind = "class" if "class" in caps else "function"
        found.append((caps[kind][0], caps["name"][0], kind))
    found.sort(key=lambda f: (f[0].start_byte, -f[0].end_byte))
    symbols: list[Symbol] = []
    stack: list[tuple[int, Symbol]] = []  # enclosing definitions: (end byte, symbol)
    for node, name, kind in found:
        while stack and stack[-1][0] <= node.start_byte:
            stack.pop()
        outer = stack[-1][1] if stack else None
        if kind == "function" and outer is not None and outer.kind == "class":
            kind = "method"
        header, doc = _header_and_doc(data, node, lang)
        sym = Symbol(
            name=_text(data, name).rsplit("::", 1)[-1],
            kind=kind,
            path=path,
            line=node.start_point[0] + 1,
            end=node.end_point[0] + 1,
            parent=outer.qualname if outer else "",
            header=header,
            doc=doc,
        )
        symbols.append(sym)
        stack.append((node.end_byte, sym))
    return Parsed(tuple(symbols), tuple(imports))


def owners(symbols: tuple[Symbol, ...], lines: int) -> list[int]:
    """For each line (0-based), the index of the innermost definition it belongs to, -1 at module level."""
    owner = [-1] * lines
    for i, sym in enumerate(symbols):  # sorted by start, outer before inner: inner ones overwrite
        owner[sym.line - 1 : min(sym.end, lines)] = [i] * (min(sym.end, lines) - sym.line + 1)
    return owner


def references(data: bytes, lang: str, name: str) -> list[int]:
    """The lines (1-based) where `name` occurs as a name in code (not in a string or a comment)."""
    return sorted({node.start_point[0] + 1 for node in _named(lang, data, name)})


def _named(lang: str, data: bytes, name: str) -> list[Node]:
    parser = _tools(lang)[0]
    tree = parser.parse(data)
    return [n for n in QueryCursor(_name_query(lang)).captures(tree.root_node).get("ref", []) if _text(data, n) == name]


@cache
def _name_query(lang: str) -> Query:
    language = _tools(lang)[2]
    kinds = [k for k in _NAME_KINDS if language.id_for_node_kind(k, True)]
    return Query(language, "[" + " ".join(f"({k})" for k in kinds) + "] @ref")


def _header_and_doc(data: bytes, node: Node, lang: str) -> tuple[str, str]:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else min(node.end_byte, node.start_byte + MAX_HEADER)
    header = _SPACE.sub(" ", data[node.start_byte : end].decode("utf-8", "replace")).strip()[:MAX_HEADER]
    doc = ""
    if lang == "python" and body is not None and body.named_child_count:
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_child_count:  # older grammars wrap the string
            first = first.named_children[0]
        if first.type == "string":
            text = _text(data, first).strip("\"'rbuRBU \n")
            doc = next((line.strip() for line in text.splitlines() if line.strip()), "")[:MAX_HEADER]
    return header, doc


def _imports(statement: str) -> list[tuple[str, tuple[str, ...]]]:
    m = _IMPORT.match(statement.replace("(", " ").replace(")", " ").replace("\\\n", " "))
    if m is None:
        return []
    if m[1] is not None:
        names = tuple(n.split()[0] for n in m[2].split(",") if n.strip() and n.split()[0] != "*")
        return [(m[1], names)]
    return [(n.split()[0], ()) for n in m[3].split(",") if n.strip()]


def _text(data: bytes, node: Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")
