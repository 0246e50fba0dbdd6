"""One journal line: an event's JSON with its checksum."""

from __future__ import annotations

import re
import zlib

from core.events import EVENT, Event

# Every line is an event's JSON with one more member at its end: the crc32 of the line as written
# without that member. Lines without it (journals from before checksums) are read unchecked, until a line with
# one: every line after it was written with one, and one without has lost its end, checksum and all.
_CRC = re.compile(rb',"crc":"([0-9a-f]{8})"}$')


def encode(event: Event) -> bytes:
    body = event.model_dump_json().encode()
    return body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)


def decode(line: bytes, checked: bool = False) -> Event:
    """One journal line as an event; ValueError (ValidationError is one) says why it cannot be. `checked`: an
    earlier line carried a checksum, so this one must too."""
    line = line.rstrip(b"\r\n")
    found = _CRC.search(line)
    if found is None and checked:
        EVENT.validate_json(line)  # not JSON: torn, as bad_line tells
        # Bytes lost from inside the line up to its checksum's end can leave other whole JSON: an event, altered.
        raise ValueError("it has lost its checksum (bytes are missing from it)")
    if found is not None:
        line = line[: found.start()] + b"}"
        if zlib.crc32(line) != int(found.group(1), 16):
            raise ValueError("its checksum does not match its content")
    return EVENT.validate_json(line)


def has_checksum(line: bytes) -> bool:
    return _CRC.search(line.rstrip(b"\r\n")) is not None
