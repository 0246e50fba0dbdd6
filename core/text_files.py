"""Reading a file the user handed in (a task, a policy, a scripted model, a price table, SWE records...)
as text: a file that cannot be read, or that is not UTF-8, is a HarnessError naming the file and what
to do, never an OSError or a UnicodeDecodeError traceback."""

from __future__ import annotations

from pathlib import Path

from core.errors import HarnessError


def read_text_file(path: Path, what: str, unreadable_hint: str = "") -> str:
    """The file's text. `what` names it in the message ("task file", "policy file"); `unreadable_hint`
    follows the reason when it cannot be read at all (a missing file, a folder, no permission)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        hint = f" {unreadable_hint}" if unreadable_hint else ""
        raise HarnessError(f"Cannot read {what} {path}: {e.strerror or e}.{hint}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise HarnessError(
            f"{what[:1].upper()}{what[1:]} {path} is not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start} "
            f"(line {line}); save it as UTF-8."
        ) from None


def utf8_safe(text: str) -> str:
    """`text` as UTF-8 can hold it: a lone surrogate (a file name's undecodable byte in an error message, a JSON
    "\\ud800" escape, as a JavaScript program writes a string cut between the halves of a pair) as its escape,
    `\\ud800`; no journal, prompt or terminal can hold one."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
