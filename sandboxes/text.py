"""Command output as the text a model is shown: an observation is text, and bytes need not be.

A line that is mostly binary (NUL and other control bytes, bytes that are not UTF-8), and any line
with such a byte right after one, is not shown: consecutive such lines become one note saying how many bytes were left out and
how to look at them. In the other lines the odd byte is escaped, `\\x00` or `\\xff`, so nothing raw
reaches a prompt, a journal or a terminal. Tab, newline and carriage return are kept as they are.
"""

from __future__ import annotations

import re

# A line is binary when at least this many of its bytes, and this share of them, are not text.
BINARY_BYTES = 8
BINARY_SHARE = 0.3
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\udc80-\udcff]")  # controls, and bytes not UTF-8


def as_text(data: bytes) -> str:
    """`data` (a command's stdout and stderr) as text: binary lines summarised, odd bytes escaped."""
    decoded = data.decode("utf-8", "surrogateescape")
    if not _NOT_TEXT.search(decoded):
        return decoded
    out: list[str] = []
    left_out = 0  # bytes of the binary lines just before
    for line in re.findall(r"[^\n]*\n|[^\n]+$", decoded):  # not splitlines: \r, \x0c, \x1c... end no line here
        odd = len(_NOT_TEXT.findall(line))
        if (odd >= BINARY_BYTES and odd >= BINARY_SHARE * len(line)) or (left_out and odd):  # a run goes on
            left_out += len(line.encode("utf-8", "surrogateescape"))
            continue
        if left_out:
            out.append(binary_note(left_out))
            left_out = 0
        out.append(escape(line))
    if left_out:
        out.append(binary_note(left_out))
    return "".join(out)


def binary_note(size: int) -> str:
    return f"[binary output: {size:,} bytes not shown; pipe it through `xxd | head` or `strings` to look at it]\n"


def escape(line: str) -> str:
    """Control characters and bytes that are not UTF-8 as \\xNN; the rest of the line as it is."""
    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line)


def is_binary(data: bytes) -> bool:
    """Whether `data` is not text: not UTF-8, or with a NUL byte (what `grep` and `git` take for binary)."""
    try:
        return "\0" in data.decode("utf-8")
    except UnicodeDecodeError:
        return True
