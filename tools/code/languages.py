"""Which files the code index reads, and how tree-sitter finds the definitions of each language.

A file is indexed when its extension is a language's or a configuration format's, it is at most
MAX_FILE_BYTES, it holds no NUL byte in its first 8 KiB (a binary file, whatever its name) and it is not
minified (lines of MINIFIED_LINE characters on average: vendored jquery.min.js says nothing of a
repository and defines a thousand one-letter names). Bytes
that are not UTF-8 are read with replacement characters. Languages without a query below are searched
by their words only.
"""

from __future__ import annotations

import posixpath

MAX_FILE_BYTES = 1 << 20  # larger "source" is generated or minified: its words drown a repository's own
MINIFIED_LINE = 400

# extension -> tree-sitter-language-pack name
LANGUAGES = {
    "py": "python",
    "pyi": "python",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "rb": "ruby",
    "cs": "csharp",
    "php": "php",
}
# Searched by words only: other code, and the configuration a fix may change.
WORDS_ONLY = frozenset(
    "pyx pxd kt kts scala swift lua sh bash zsh pl pm r jl ex exs erl hs ml clj sql cfg ini toml yaml yml "
    "json xml html css scss proto gradle cmake mk".split()
)

# Definitions per language: @name is the defined name, @class or @function the whole definition.
QUERIES = {
    "python": "(class_definition name: (identifier) @name) @class"
    " (function_definition name: (identifier) @name) @function",
    "javascript": "(function_declaration name: (identifier) @name) @function"
    " (class_declaration name: (identifier) @name) @class"
    " (method_definition name: (property_identifier) @name) @function",
    "typescript": "(function_declaration name: (identifier) @name) @function"
    " (class_declaration name: (type_identifier) @name) @class"
    " (method_definition name: (property_identifier) @name) @function"
    " (interface_declaration name: (type_identifier) @name) @class",
    "tsx": "(function_declaration name: (identifier) @name) @function"
    " (class_declaration name: (type_identifier) @name) @class"
    " (method_definition name: (property_identifier) @name) @function",
    "go": "(function_declaration name: (identifier) @name) @function"
    " (method_declaration name: (field_identifier) @name) @function"
    " (type_spec name: (type_identifier) @name) @class",
    "rust": "(function_item name: (identifier) @name) @function"
    " (struct_item name: (type_identifier) @name) @class"
    " (enum_item name: (type_identifier) @name) @class"
    " (trait_item name: (type_identifier) @name) @class",
    "java": "(class_declaration name: (identifier) @name) @class"
    " (interface_declaration name: (identifier) @name) @class"
    " (method_declaration name: (identifier) @name) @function"
    " (constructor_declaration name: (identifier) @name) @function",
    "c": "(function_definition declarator: (function_declarator declarator: (identifier) @name)) @function"
    " (struct_specifier name: (type_identifier) @name body: (_)) @class",
    "cpp": "(function_definition declarator: (function_declarator declarator:"
    " [(identifier) (field_identifier) (qualified_identifier)] @name)) @function"
    " (class_specifier name: (type_identifier) @name body: (_)) @class"
    " (struct_specifier name: (type_identifier) @name body: (_)) @class",
    "ruby": "(method name: (identifier) @name) @function"
    " (class name: (constant) @name) @class"
    " (module name: (constant) @name) @class",
    "csharp": "(class_declaration name: (identifier) @name) @class"
    " (method_declaration name: (identifier) @name) @function"
    " (interface_declaration name: (identifier) @name) @class",
    "php": "(function_definition name: (name) @name) @function"
    " (class_declaration name: (name) @name) @class"
    " (method_declaration name: (name) @name) @function",
}


def extension(path: str) -> str:
    name = posixpath.basename(path)
    return name.rsplit(".", 1)[1].lower() if "." in name[1:] else ""


def language(path: str) -> str | None:
    """The tree-sitter language of a path, None for a file searched by words only."""
    return LANGUAGES.get(extension(path))


def wanted(path: str, size: int) -> bool:
    """Whether a file of this name and size is indexed (its content is checked apart: `is_binary`)."""
    ext = extension(path)
    return size <= MAX_FILE_BYTES and (ext in LANGUAGES or ext in WORDS_ONLY)


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def is_minified(data: bytes) -> bool:
    """Minified or generated code: lines over MINIFIED_LINE characters on average, in a file of some size."""
    return len(data) > 8192 and len(data) > MINIFIED_LINE * (data.count(b"\n") + 1)


def is_test(path: str) -> bool:
    """A test file by the usual conventions: under tests/ or testing/, or test_*.py, *_test.*, conftest.py."""
    parts = path.lower().split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "testing", "__tests__", "spec") for p in parts[:-1])
        or name.startswith("test_")
        or name.rsplit(".", 1)[0].endswith(("_test", "_tests", ".test", ".spec"))
        or name == "conftest.py"
    )
