"""Which format a file is in, from its content (never its name), and the trajectories it holds.

Every way a file can fail to import is a `BadTrajectory` whose message names the file and says what is
wrong with it in one line: unreadable, not UTF-8, cut short, a format it does not read as; a file that is no
trajectory at all (JSON of some other tool, such as a predictions file beside the trajectories) is a
`NotTrajectory`, which a batch passes over. A file of JSON lines (Claude Code's sessions, OpenHands' evaluation
output) is read as the list of its lines' objects. Inspect's `.eval` zip may be deflated or, as current Inspect
writes it, zstd-compressed.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zipfile_zstd  # noqa: F401  (teaches zipfile zstd, the compression current Inspect writes .eval files with)

from core.text_files import utf8_safe
from evals.interop.imports import atif, claude_code, inspect_log, mini_swe_agent, openhands, swe_agent
from evals.interop.imports.form import BadTrajectory, NotTrajectory, Trajectory

Reader = Callable[[Any, Path], Iterator[Trajectory]]
FORMATS: dict[str, tuple[Callable[[Any], bool], Reader]] = {
    "mini-swe-agent": (mini_swe_agent.looks_like, mini_swe_agent.read),
    "swe-agent": (swe_agent.looks_like, swe_agent.read),
    "atif": (atif.looks_like, atif.read),
    "inspect": (inspect_log.looks_like, inspect_log.read),
    "claude-code": (claude_code.looks_like, claude_code.read),
    "openhands": (openhands.looks_like, openhands.read),
}
EXPECTED = (
    "a mini-swe-agent .traj.json, a SWE-agent .traj, an ATIF trajectory, an Inspect eval log (.eval, .json), "
    "a Claude Code session (.jsonl) or an OpenHands event stream (.json, or an evaluation's output.jsonl)"
)


@dataclass(frozen=True)
class Source:
    path: Path
    sha256: str
    format: str
    doc: Any  # the parsed file (JSON lines: a list); an .eval log's samples are read from its zip as they are asked for


def open_source(path: Path, fmt: str = "auto") -> Source:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BadTrajectory(f"{path}: cannot be read: {e.strerror or e}") from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        doc = _eval_zip(path, data) if data[:4] == b"PK\x03\x04" else _json(path, data)
    except RecursionError:  # json.loads, at a few thousand levels
        raise BadTrajectory(f"{path}: its JSON is nested too deeply to read") from None
    found = fmt if fmt != "auto" else next((name for name, (looks, _) in FORMATS.items() if looks(doc)), None)
    if found is None:
        raise NotTrajectory(f"{path}: {_what(doc)}, in no format `harness import` reads ({EXPECTED})")
    if not FORMATS[found][0](doc):
        raise BadTrajectory(f"{path}: does not read as {found}: {_what(doc)}")
    return Source(path, digest, found, doc)


def trajectories(source: Source) -> Iterator[Trajectory]:
    """The file's runs, read one at a time; a malformed part becomes a BadTrajectory naming the file."""
    read = FORMATS[source.format][1]
    try:
        yield from read(source.doc, source.path)
    except BadTrajectory as e:
        raise BadTrajectory(f"{source.path}: {e}") from None
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        IndexError,
        RecursionError,  # a sample of an .eval log nested too deeply
        zipfile.BadZipFile,
        NotImplementedError,
    ) as e:
        why = (str(e).splitlines() or [""])[0]  # a validation error's first line says what; the rest is detail
        raise BadTrajectory(f"{source.path}: not a readable {source.format} file ({type(e).__name__}: {why})") from None


def _json(path: Path, data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadTrajectory(
            f"{path}: not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); is it a binary file?"
        ) from None
    if not text.strip():
        raise BadTrajectory(f"{path}: the file is empty")
    try:
        return loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data" and _first_line_is_json(text):
            return _json_lines(path, text)
        cut = _open_at_end(text)
        why = (
            "it ends before the JSON does (truncated?)" if cut else f"invalid JSON at line {e.lineno}, column {e.colno}"
        )
        raise BadTrajectory(f"{path}: {why}: {e.msg}") from None


def _open_at_end(text: str) -> bool:
    """The text stops inside a string, an object or a list: what a file cut short looks like."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return in_string or depth > 0


def _json_lines(path: Path, text: str) -> list[Any]:
    """One value per line; a session cut short mid-line (a process killed while writing) loses only that line."""
    lines = text.splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(loads(line))
        except json.JSONDecodeError as e:
            if n < len(lines):
                raise BadTrajectory(f"{path}: JSON lines, but line {n} is not JSON ({e.msg})") from None
    return out


def _first_line_is_json(text: str) -> bool:
    try:
        json.loads(text.split("\n", 1)[0])
    except ValueError:
        return False
    return True


def _eval_zip(path: Path, data: bytes) -> dict[str, Any]:
    """An Inspect `.eval` log: header.json (or, while it is still written, _journal/start.json) and its samples."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
        head = "header.json" if "header.json" in names else "_journal/start.json"
        if head not in names:
            raise BadTrajectory(f"{path}: a zip archive, but not an Inspect eval log (it has no header.json)")
        header = loads(archive.read(head))
    except (zipfile.BadZipFile, EOFError) as e:
        raise BadTrajectory(f"{path}: a damaged zip archive (truncated?): {e}") from None
    except NotImplementedError as e:  # a compression method zipfile (even with zstd taught) cannot read
        raise BadTrajectory(f"{path}: a zip archive whose compression cannot be read here ({e})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadTrajectory(f"{path}: an Inspect eval log whose header is not valid JSON ({e})") from None
    samples = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")), key=_sample_order)
    return {**header, "samples": (loads(archive.read(n)) for n in samples)}


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(data: str | bytes) -> Any:
    """JSON whose every string a journal can hold: a lone surrogate a "\\ud800" escape made is kept as that escape's
    text (utf8_safe), not refused: a run is not lost for one character cut in half."""
    value = json.loads(data)
    raw = data.encode() if isinstance(data, str) else data
    return _held(value) if _SURROGATE_ESCAPE.search(raw) else value


def _held(value: Any) -> Any:
    if isinstance(value, str):
        return utf8_safe(value)
    if isinstance(value, list):
        return [_held(v) for v in value]
    if isinstance(value, dict):
        return {utf8_safe(k): _held(v) for k, v in value.items()}
    return value


def _sample_order(name: str) -> tuple[str, int]:
    stem = name.removeprefix("samples/").removesuffix(".json")
    sample, _, epoch = stem.rpartition("_epoch_")
    return (sample.zfill(12), int(epoch) if epoch.isdigit() else 0)


def _what(doc: Any) -> str:
    if isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
        names = list(dict.fromkeys(k for x in doc[:20] for k in x))
        return f"{len(doc)} JSON objects with keys {', '.join(names[:6])}" + (", ..." if len(names) > 6 else "")
    if isinstance(doc, dict):
        keys = ", ".join(list(doc)[:6]) + (", ..." if len(doc) > 6 else "")
        return f"a JSON object with keys {keys}" if doc else "an empty JSON object"
    return f"a JSON {type(doc).__name__}"
