"""Parse `[section]` headers and `key = value` lines; `#` and `;` start comments."""

from configlite.errors import ParseError

COMMENT = ("#", ";")


def _strip_comment(value: str) -> str:
    # A comment inside a value must follow whitespace, so "a#b" stays a value.
    for i, ch in enumerate(value):
        if ch in COMMENT and (i == 0 or value[i - 1].isspace()):
            return value[:i].rstrip()
    return value


def parse(text: str) -> dict:
    sections: dict = {}
    current = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(COMMENT):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ParseError(lineno, f"bad section header {line!r}")
            current = line[1:-1].strip()
            sections.setdefault(current, {})
            continue
        if current is None:
            raise ParseError(lineno, "key before any [section]")
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ParseError(lineno, f"expected key = value, got {line!r}")
        sections[current][key.strip().lower()] = _strip_comment(value.strip())
    return sections
