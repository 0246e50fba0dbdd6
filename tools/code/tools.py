"""The code tools an agent can be given: ranked search, symbols, and a map of the repository.

Each reads the workspace's index as it stands at the call (tools.code.workspace), so edits the agent
made are searched too; each is a read tool, its text an ordinary observation (journaled, truncated,
replayed like any other). A workspace that cannot be indexed, or has nothing to index, is one clear
observation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from core.context_policy import RepoMap
from sandboxes.base import Sandbox
from tools.base import Effect, Registry, Tool, ToolContext, ToolResult
from tools.code import parse, repomap, workspace
from tools.code.index import CodeIndex
from tools.code.rank import Weights, evidence, file_scores, function_scores
from tools.code.words import IDENTIFIER, split

MAX_DEFINITIONS = 30
MAX_REFERENCES = 60
SNIPPET_LINES = 3  # of a definition, the lines that hold the most of the query's words
DEFINITIONS_PER_FILE = 2


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, description="What to find: words, identifiers, an error message, an issue's text.")
    k: int = Field(10, ge=1, le=50, description="How many files to list, best first.")


class SymbolArgs(BaseModel):
    name: str = Field(
        min_length=1, description="A name, e.g. bulk_create, or one qualified by its class: QuerySet.bulk_create."
    )


class MapArgs(BaseModel):
    focus: str = Field("", description="Files, names or words to centre the map on; empty: the whole repository.")
    budget: int = Field(1024, ge=64, le=16384, description="The map's size in tokens (about 4 characters each).")


def with_index(
    run: Callable[[BaseModel, CodeIndex, str], ToolResult],
) -> Callable[[BaseModel, ToolContext], ToolResult]:
    """Run with the workspace's current index; a workspace that cannot be read, or holds no source, answers
    in one line."""

    def guarded(args: BaseModel, ctx: ToolContext) -> ToolResult:
        try:
            ws = workspace.current(ctx.sandbox, ctx.timeout_s)
        except workspace.WorkspaceError as e:
            return ToolResult(f"The workspace could not be indexed: {e}", ok=False)
        except OSError as e:  # the sandbox refused a file or a command (its folder is gone, say)
            return ToolResult(f"The workspace could not be indexed: {e.strerror or e}", ok=False)
        assert ws.index is not None
        if not ws.index.entries:
            skipped = ws.index.skipped
            extra = (
                f" ({len(skipped.binary)} binary, {len(skipped.too_large)} too large)"
                if skipped.binary or skipped.too_large
                else ""
            )
            return ToolResult(f"The workspace {ws.root} holds no source file to search{extra}.")
        return run(args, ws.index, _about(ws))

    return guarded


def _about(ws: workspace.Workspace) -> str:
    # 12 digits of the commit: what core.volatile takes for a commit id, so a replay whose setup committed the same
    # files anew (another time, another id) compares equal
    where = f"{ws.root} at {ws.head[:12]}" if ws.head else ws.root
    # What the index holds, never how the harness came by it (files re-read, a cached index): that depends on the
    # process, so a resume, an executed replay or a batch's second run of a commit would see other text.
    notes = [f"{len(ws.index.entries) if ws.index else 0} files indexed"]
    if ws.left_out:
        notes.append(f"{ws.left_out} more left out: the index holds at most {workspace.MAX_FILES} files")
    return f"{where} ({', '.join(notes)})"


def search_code(args: SearchArgs, index: CodeIndex, about: str) -> ToolResult:
    weights = Weights()
    ev = evidence(index, args.query, weights)
    files = file_scores(ev, weights)
    funcs = function_scores(ev, index.symbol_file, files, weights)
    top = [int(i) for i in np.argsort(-files, kind="stable")[: args.k] if files[i] > 0]
    if not top:
        return ToolResult(f"Nothing in {about} matches {args.query!r}. Try other words, or find_symbol for a name.")
    wanted = {w for ident in IDENTIFIER.findall(args.query) for w in split(ident)}
    lines = [f"Files for {args.query!r} in {about}, best first:"]
    for rank, i in enumerate(top, 1):
        entry = index.entries[i]
        lines.append(f"{rank}. {entry.path}")
        syms = [j for j in np.flatnonzero(index.symbol_file == i)]
        syms.sort(key=lambda j: -funcs[j])
        text = entry.text.split("\n")
        for j in syms[:DEFINITIONS_PER_FILE]:
            if ev.parts[j] <= 0 and ev.named[j] <= 0:
                break
            sym = index.symbols[j]
            lines.append(f"   {sym.line}-{sym.end} {sym.qualname}: {sym.header}")
            for n in _snippet(text, sym.line, sym.end, wanted):
                lines.append(f"   {n:>6}: {text[n - 1].strip()[:160]}")
    return ToolResult("\n".join(lines))


def _snippet(text: list[str], first: int, last: int, wanted: set[str]) -> list[int]:
    """The lines of a definition (its header left out) holding the most of the wanted words, in file order."""
    scored = []
    for n in range(first + 1, min(last, first + 400, len(text)) + 1):
        hits = len({w for ident in IDENTIFIER.findall(text[n - 1]) for w in split(ident)} & wanted)
        if hits:
            scored.append((-hits, n))
    return sorted(n for _, n in sorted(scored)[:SNIPPET_LINES])


def find_symbol(args: SymbolArgs, index: CodeIndex, about: str) -> ToolResult:
    owner, _, name = args.name.strip().rpartition(".")
    every = [index.symbols[i] for i in index.definitions.get(name, ())]
    found = [s for s in every if not owner or owner.rsplit(".", 1)[-1] in (_last(s.parent), _stem(s.path))]
    if not found:
        if every:
            where = ", ".join(sorted({f"{s.qualname} ({s.path})" for s in every})[:10])
            return ToolResult(f"No definition of {args.name!r} in {about}; {name} is defined as: {where}.")
        near = sorted(n for n in index.definitions if name.lower() in n.lower())[:10]
        hint = f" Names that contain it: {', '.join(near)}." if near else ""
        return ToolResult(f"No definition of {args.name!r} in {about}.{hint}")
    lines = [f"Definitions of {args.name!r} in {about}:"]
    lines += [f"{s.path}:{s.line}  {s.kind} {s.qualname}: {s.header}" for s in found[:MAX_DEFINITIONS]]
    if len(found) > MAX_DEFINITIONS:
        lines.append(f"[{len(found) - MAX_DEFINITIONS} more definitions]")
    refs, unread = _references(index, name, {(s.path, s.line) for s in found})
    lines.append("References:" if refs else "References: none outside the definitions.")
    lines += [f"{path}:{n}: {text.strip()[:160]}" for path, n, text in refs]
    if unread:
        lines.append(f"[{unread} more files use the name; grep for them, or qualify the name]")
    return ToolResult("\n".join(lines))


def _references(
    index: CodeIndex, name: str, definitions: set[tuple[str, int]]
) -> tuple[list[tuple[str, int, str]], int]:
    """Lines where the name occurs as a name (tree-sitter: not in a string or comment), definitions aside, file by
    file until MAX_REFERENCES; and how many files using it were not read."""
    using = [e for e in index.entries if name in e.uses]
    out: list[tuple[str, int, str]] = []
    for done, entry in enumerate(using):
        if len(out) >= MAX_REFERENCES:
            return out, len(using) - done
        lines = entry.text.split("\n")
        found = (
            parse.references(entry.text.encode("utf-8"), entry.lang, name) if entry.lang else _word_lines(lines, name)
        )
        out += [(entry.path, n, lines[n - 1]) for n in found if (entry.path, n) not in definitions and n <= len(lines)]
    return out, 0


def _last(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".")[0]


def _word_lines(lines: list[str], name: str) -> list[int]:
    return [n for n, line in enumerate(lines, 1) if name in IDENTIFIER.findall(line)]


def repo_map(args: MapArgs, index: CodeIndex, about: str) -> ToolResult:
    text, shown, total = repomap.render(index, args.focus, args.budget)
    focus = f" around {args.focus!r}" if args.focus.strip() else ""
    return ToolResult(
        f"Map of {about}{focus}: {shown} of {total} files, most related first (line numbers in parentheses).\n{text}"
    )


def _read_tool(name: str, summary: str, description: str, args: type[BaseModel], run: Callable) -> Tool:
    return Tool(name, summary, description, args, Effect.READ, with_index(run))


SEARCH_CODE = _read_tool(
    "search_code",
    "Rank the repository's files and functions for a query (words, identifiers, an error).",
    "Search the repository for code about a query, ranked best first: each file with its best-matching definitions "
    "(line range, qualified name, header) and the lines that match most. Ranks by identifiers split into words, "
    "file paths, definition names and the files a query names; it sees your edits.",
    SearchArgs,
    search_code,
)
FIND_SYMBOL = _read_tool(
    "find_symbol",
    "Where a function or class is defined, and every line that uses it.",
    "Find the definitions of a name (a function, method or class; qualify it as Class.method to narrow) with "
    "file:line and header, and its references: every line where the name is used in code.",
    SymbolArgs,
    find_symbol,
)
REPO_MAP = _read_tool(
    "repo_map",
    "A map of the repository's most relevant files and their definitions, in a token budget.",
    "Show the repository's files most related to a focus (or the most central files, without one), each with its "
    "classes and functions and their line numbers, as much as fits the budget.",
    MapArgs,
    repo_map,
)
CODE_TOOLS = {t.name: t for t in (SEARCH_CODE, FIND_SYMBOL, REPO_MAP)}


def with_code_tools(tools: Registry, names: Sequence[str]) -> Registry:
    """The registry with the named code tools added (a tool of that name already there stays: a replay's)."""
    extra = [CODE_TOOLS[n] for n in names if tools.get(n) is None]
    return Registry.of([*tools, *extra]) if extra else tools


def opening_map(step: RepoMap, sandbox: Sandbox, task: str, timeout: float) -> str:
    """The repository map a run's opening prompt carries after its task (core.context_policy.RepoMap)."""
    try:
        ws = workspace.current(sandbox, timeout)
    except (workspace.WorkspaceError, OSError) as e:
        return f"[No repository map: the workspace could not be indexed: {e}]"
    if ws.index is None or not ws.index.entries:
        return f"[No repository map: the workspace {ws.root} holds no source file.]"
    text, shown, total = repomap.render(ws.index, task if step.focus == "task" else "", step.budget)
    which = "those most related to the task first" if step.focus == "task" else "the most central first"
    return f"A map of the repository at {ws.root} ({shown} of {total} files, {which}; line numbers in parentheses):\n{text}"
