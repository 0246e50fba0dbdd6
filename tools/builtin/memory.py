"""The `memory` tool: notes the agent keeps in files under `/memories`, on a store the harness keeps outside
the sandbox, with the command set of Anthropic's memory tool (`memory_20250818`) and its replies, so a model
trained on that tool uses this one as it is.

The commands work on the store's files (core.memory_entries) and hand what they change to the store
(`MemoryBackend.commit`), which dates each change as an entry and journals it before the call's observation
is written. Two optional arguments go beyond Anthropic's: `source`, the tool call id or artifact a note rests
on, and `kind`, observation or conclusion. Bad input (a path outside `/memories`, a file over the size limit,
text that is not UTF-8, a full quota) is one error observation saying what is wrong, and changes nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.memory_entries import ROOT, MemoryChange, Provenance
from core.policy import MemoryPolicy
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult

LINE_NUMBER_WIDTH = 6
HIDDEN = "node_modules"
NEEDS = {
    "view": ("path",),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}


PATHS = ("path", "old_path", "new_path")
OPTIONAL = {"view": ("view_range",), "create": ("source", "kind"), "str_replace": ("source", "kind")}
OPTIONAL["insert"] = OPTIONAL["create"]


class MemoryBackend(Protocol):
    """The store the tool works on; the harness's keeps a ledger and journals every commit."""

    def files(self) -> Mapping[str, str]: ...

    def commit(self, changes: Sequence[MemoryChange], said: Provenance, reply: str, ctx: ToolContext) -> None: ...

    def reply_of(self, call_id: str) -> str | None:
        """The reply of a call whose changes the store already holds (a resumed run's interrupted write)."""
        ...


class MemoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"] = Field(
        description="view a file or directory, create a file, str_replace a unique snippet, insert text at a "
        "line, delete a file or directory, rename (move) one"
    )
    path: str | None = Field(None, description="a path under /memories (every command but rename)")
    view_range: list[int] | None = Field(
        None, description="view: [first line, last line] of a file, 1-based; last -1: to the end"
    )
    file_text: str | None = Field(None, description="create: the new file's content")
    old_str: str | None = Field(None, description="str_replace: the exact text to replace, occurring once")
    new_str: str | None = Field(None, description="str_replace: the text to put in its place")
    insert_line: int | None = Field(None, description="insert: the line after which the text goes (0: the top)")
    insert_text: str | None = Field(None, description="insert: the text to insert")
    old_path: str | None = Field(None, description="rename: the file or directory to move")
    new_path: str | None = Field(None, description="rename: where it goes")
    source: str | None = Field(
        None, max_length=200, description="optional: the tool call id or artifact this note rests on"
    )
    kind: Literal["observation", "conclusion"] | None = Field(
        None, description="optional: whether the note records what was observed or what you concluded"
    )

    @model_validator(mode="after")
    def _needs(self) -> MemoryArgs:
        missing = [name for name in NEEDS[self.command] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"{self.command} needs {' and '.join(missing)}")
        return self


def command_schema() -> dict:
    """One object per command, with the fields it takes and those it needs required: what the model is shown,
    and what a constraining engine holds its call to, so even a small model sends a command that can run."""
    fields = MemoryArgs.model_json_schema()["properties"]
    described: set[str] = set()

    def field(name: str) -> dict:
        drop = ("title", "default", *(("description",) if name in described else ()))  # said once is enough
        described.add(name)
        schema = {k: v for k, v in fields[name].items() if k not in drop}
        choices = [c for c in schema.pop("anyOf", []) if c.get("type") != "null"]  # an optional field's own type
        if name in PATHS:  # shown, not enforced: a path elsewhere gets Anthropic's own reply, not a schema error
            schema["pattern"] = f"^{ROOT}(/.*)?$"
        return {**choices[0], **schema} if choices else schema

    return {
        "type": "object",
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "command": {"const": command},
                    **{name: field(name) for name in (*needs, *OPTIONAL.get(command, ()))},
                },
                "required": ["command", *needs],
                "additionalProperties": False,
            }
            for command, needs in NEEDS.items()
        ],
    }


class Refused(Exception):
    """A command that changes nothing: its message is the observation."""


def resolve(path: str) -> str:
    """`path` in its one spelling under /memories, or Refused when it leads elsewhere."""
    if "\x00" in path:
        raise Refused(f"The path {path!r} holds a NUL character; memory paths are plain text.")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise Refused(f"Path must start with {ROOT}, got: {path}")
    clean = posixpath.normpath(path)
    if clean != ROOT and not clean.startswith(ROOT + "/"):
        raise Refused(f"Path {path} would escape {ROOT} directory")
    return clean


def checked_text(text: str, what: str) -> str:
    """Text a file may hold: UTF-8 (a lone surrogate from a JSON escape is not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise Refused(
            f"{what} is not valid UTF-8 text (character {e.start}: {text[e.start : e.end]!r}); memory files hold "
            "UTF-8 text only. Nothing was changed."
        ) from None
    return text


def under(files: Mapping[str, str], directory: str) -> list[str]:
    prefix = directory.rstrip("/") + "/"
    return sorted(p for p in files if p.startswith(prefix))


def is_dir(files: Mapping[str, str], path: str) -> bool:
    return path == ROOT or bool(under(files, path))


def size_text(n: int) -> str:
    if n == 0:
        return "0B"
    units, i = ["B", "K", "M", "G"], min((n.bit_length() - 1) // 10, 3)
    size = n / 1024**i
    return f"{int(size)}{units[i]}" if size == int(size) else f"{size:.1f}{units[i]}"


def numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{str(first + i).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def view(files: Mapping[str, str], path: str, shown: str, view_range: list[int] | None) -> str:
    if path in files:
        lines = files[path].split("\n")
        first = 1
        if view_range is not None:
            if len(view_range) != 2:
                raise Refused(f"view_range must be two numbers, [first line, last line]; got {view_range}.")
            start, end = view_range
            last = len(lines) if end == -1 else end
            if start < 1 or start > len(lines) or last < start:
                raise Refused(
                    f"Invalid view_range {view_range} for {shown}: it has {len(lines)} lines; give "
                    f"[first, last] with 1 <= first <= last <= {len(lines)}, or last -1 for the end."
                )
            lines, first = lines[start - 1 : last], start
        return f"Here's the content of {shown} with line numbers:\n" + numbered(lines, first)
    if not is_dir(files, path):
        raise Refused(f"The path {shown} does not exist. Please provide a valid path.")
    rows = [f"{size_text(_bytes(files, path))}\t{shown}"]
    for item in _listing(files, path):
        size, slash = (len(files[item].encode()), "") if item in files else (_bytes(files, item), "/")
        rows.append(f"{size_text(size)}\t{shown.rstrip('/')}{item[len(path.rstrip('/')) :]}{slash}")
    header = f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items and {HIDDEN}:"
    return header + "\n" + "\n".join(rows)


def _bytes(files: Mapping[str, str], directory: str) -> int:
    return sum(len(files[p].encode()) for p in under(files, directory))


def _listing(files: Mapping[str, str], directory: str, depth: int = 1) -> list[str]:
    """The files and directories in `directory`, each directory followed by its own items, two levels deep."""
    prefix = directory.rstrip("/") + "/"
    children = sorted({prefix + p[len(prefix) :].split("/")[0] for p in under(files, directory)})
    out: list[str] = []
    for child in children:
        name = child[len(prefix) :]
        if name.startswith(".") or name == HIDDEN:
            continue
        out.append(child)
        if child not in files and depth < 2:
            out.extend(_listing(files, child, depth + 1))
    return out


def create(files: Mapping[str, str], path: str, shown: str, text: str) -> tuple[list[MemoryChange], str]:
    if path == ROOT or is_dir(files, path):
        raise Refused(f"The path {shown} is a directory; create makes a file. Pick a file name under it.")
    if path in files:
        raise Refused(f"File {shown} already exists")
    _no_file_above(files, path)
    return [MemoryChange(path=path, text=checked_text(text, "file_text"))], f"File created successfully at: {shown}"


def _no_file_above(files: Mapping[str, str], path: str) -> None:
    parent = posixpath.dirname(path)
    while parent != ROOT:
        if parent in files:
            raise Refused(f"{parent} is a file, so {path} cannot be created under it.")
        parent = posixpath.dirname(parent)


def _file(files: Mapping[str, str], path: str, shown: str) -> str:
    if path in files:
        return files[path]
    if is_dir(files, path):
        raise Refused(f"The path {shown} is not a file.")
    raise Refused(f"The path {shown} does not exist. Please provide a valid path.")


def str_replace(files: Mapping[str, str], path: str, shown: str, old: str, new: str) -> tuple[list[MemoryChange], str]:
    content = _file(files, path, shown)
    checked_text(new, "new_str")
    count = content.count(old) if old else 0
    if count == 0:
        raise Refused(f"No replacement was performed, old_str `{old}` did not appear verbatim in {shown}.")
    if count > 1:
        lines, at = [], content.find(old)
        while at != -1:
            lines.append(str(content.count("\n", 0, at) + 1))
            at = content.find(old, at + 1)
        raise Refused(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {', '.join(lines)}. "
            "Please ensure it is unique"
        )
    changed_line = content.count("\n", 0, content.find(old))
    text = content.replace(old, new)
    new_lines = text.split("\n")
    first, last = max(0, changed_line - 2), min(len(new_lines), changed_line + 3)
    reply = "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + numbered(
        new_lines[first:last], first + 1
    )
    return [MemoryChange(path=path, text=text)], reply


def insert(files: Mapping[str, str], path: str, shown: str, line: int, text: str) -> tuple[list[MemoryChange], str]:
    content = _file(files, path, shown)
    checked_text(text, "insert_text")
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    if line < 0 or line > len(lines):
        raise Refused(f"Invalid `insert_line` parameter: {line}. It should be within the range [0, {len(lines)}].")
    lines.insert(line, text.rstrip("\n"))
    out = "\n".join(lines)
    return [
        MemoryChange(path=path, text=out if out.endswith("\n") else out + "\n")
    ], f"The file {shown} has been edited."


def delete(files: Mapping[str, str], path: str, shown: str) -> tuple[list[MemoryChange], str]:
    if path == ROOT:
        raise Refused(f"Cannot delete the {ROOT} directory itself")
    gone = [path] if path in files else under(files, path)
    if not gone:
        raise Refused(f"The path {shown} does not exist")
    return [MemoryChange(path=p, text=None) for p in gone], f"Successfully deleted {shown}"


def rename(
    files: Mapping[str, str], old: str, new: str, old_shown: str, new_shown: str
) -> tuple[list[MemoryChange], str]:
    if old == ROOT:
        raise Refused(f"Cannot rename the {ROOT} directory itself")
    if new in files or is_dir(files, new):
        raise Refused(f"The destination {new_shown} already exists")
    moving = [old] if old in files else under(files, old)
    if not moving:
        raise Refused(f"The path {old_shown} does not exist")
    if (new + "/").startswith(old + "/"):
        raise Refused(f"Cannot move {old_shown} into itself ({new_shown}).")
    _no_file_above(files, new)
    changes = []
    for p in moving:
        target = new + p[len(old) :]
        changes += [MemoryChange(path=p, text=None), MemoryChange(path=target, text=files[p], moved_from=p)]
    return changes, f"Successfully renamed {old_shown} to {new_shown}"


def command(files: Mapping[str, str], args: MemoryArgs) -> tuple[list[MemoryChange], str]:
    """The changes a command makes and its reply; Refused when it changes nothing."""
    if args.command == "rename":
        assert args.old_path is not None and args.new_path is not None  # MemoryArgs checks what each command needs
        return rename(files, resolve(args.old_path), resolve(args.new_path), args.old_path, args.new_path)
    assert args.path is not None
    path, shown = resolve(args.path), args.path
    if args.command == "view":
        return [], view(files, path, shown, args.view_range)
    if args.command == "create":
        assert args.file_text is not None
        return create(files, path, shown, args.file_text)
    if args.command == "str_replace":
        assert args.old_str is not None and args.new_str is not None
        return str_replace(files, path, shown, args.old_str, args.new_str)
    if args.command == "insert":
        assert args.insert_line is not None and args.insert_text is not None
        return insert(files, path, shown, args.insert_line, args.insert_text)
    return delete(files, path, shown)


def within_limits(files: Mapping[str, str], changes: Sequence[MemoryChange], limits: MemoryPolicy) -> None:
    """A change that would make a file too big, or the store bigger than its quota, is refused whole."""
    after = dict(files)
    for c in changes:
        if c.text is None:
            after.pop(c.path, None)
        else:
            after[c.path] = c.text
            size = len(c.text.encode())
            if size > limits.max_file_bytes:
                raise Refused(
                    f"{c.path} would hold {size} bytes, over the limit of {limits.max_file_bytes} bytes per memory "
                    "file. Nothing was changed; keep notes short, or split them over several files."
                )
    total = sum(len(t.encode()) for t in after.values())
    if total > limits.max_total_bytes:
        raise Refused(
            f"The memory is full: this change would bring it to {total} bytes, over its quota of "
            f"{limits.max_total_bytes} bytes. Nothing was changed; delete or shorten notes you no longer need first."
        )


def memory_tool(store: MemoryBackend, limits: MemoryPolicy) -> Tool:
    def run(args: MemoryArgs, ctx: ToolContext) -> ToolResult:
        files = store.files()
        try:
            changes, reply = command(files, args)
            within_limits(files, changes, limits)
        except Refused as e:
            return ToolResult(str(e), ok=False)
        if changes:
            store.commit(changes, Provenance(source=args.source, kind=args.kind), reply, ctx)
        return ToolResult(reply)

    def already_done(args: MemoryArgs, ctx: ToolContext) -> ToolResult | None:
        reply = store.reply_of(ctx.call_id)
        return None if reply is None else ToolResult(reply)

    return Tool(
        name="memory",
        summary="Keep notes in /memories that outlast compaction (and, with a kept store, the run).",
        description=(
            "Your memory: files under /memories that the harness keeps outside the sandbox and shows you at the "
            "top of every prompt, however much of the conversation is folded away. Commands: view (a file, or a "
            "directory's listing), create, str_replace, insert, delete, rename. Record what you observed (name the "
            "tool call it came from in `source`) rather than what you guessed, and when something changes, edit "
            "the note: the older version is kept, marked superseded."
        ),
        args=MemoryArgs,
        input_schema=command_schema(),
        effect=Effect.NOTE,
        run=run,
        already_done=already_done,
    )


def with_memory(tools: Registry, store: MemoryBackend, limits: MemoryPolicy) -> Registry:
    """`tools` with the memory tool on `store`: in the place of a `memory` tool they hold (a recording's), else
    last."""
    tool = memory_tool(store, limits)
    if tools.get(tool.name) is None:
        return Registry.of([*tools, tool])
    return Registry.of(tool if t.name == tool.name else t for t in tools)
