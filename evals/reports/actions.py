"""What a tool call does to files, read from its name and arguments alone: which files it reads, and whether it
may change anything. The same reading serves our runs and imported ones, whatever their tools are called.

File tools say so by name: `read_file`, Claude Code's `Read`, SWE-agent's `open`, an editor's `view` command
read; `write_file`, `Edit`, `Write`, an editor's `create`/`str_replace`/`insert` write. A shell command (`bash`,
`shell`, Claude Code's `Bash`, OpenHands' `execute_bash`) is read a command at a time: `cat`, `nl`, `head`,
`tail`, `sed -n` and the like read the files they name; a command line changes nothing when every program in it
only looks (`ls`, `grep`, `git diff`...) and nothing is redirected into a file. Anything else may write: the rule
errs towards "may have changed something", so a retry after it is never called needless.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any

from core.types import ToolCall

SHELL_TOOLS = {"bash", "shell", "execute_bash", "run", "terminal", "exec", "run_command"}
READ_TOOLS = {"read_file", "read", "view", "open", "cat", "view_file", "read_text_file"}
EDITORS = {"str_replace_editor", "str_replace_based_edit_tool", "edit_file", "editor"}  # `command` says what
PATH_KEYS = ("path", "file_path", "filename", "file", "target_file")
LOOKING_TOOLS = {"grep", "glob", "ls", "list_dir", "list_directory", "search", "find", "webfetch", "websearch"}
LOOKING_TOOLS |= {"get_board", "get_legal_moves", "describe_tool", "think", "todowrite", "taskoutput"}
READERS = {"cat", "nl", "head", "tail", "less", "more", "bat", "view", "open"}  # open: SWE-agent's file viewer
LOOKERS = READERS | {"ls", "ll", "grep", "egrep", "fgrep", "rg", "ag", "wc", "echo", "printf", "pwd", "which"}
LOOKERS |= {"type", "file", "stat", "du", "df", "diff", "cmp", "sort", "uniq", "cut", "tr", "tree", "realpath"}
LOOKERS |= {"dirname", "basename", "date", "env", "true", "false", "test", "[", "whoami", "id", "uname", "cd"}
LOOKERS |= {"sed", "awk", "find", "git", "xargs", "jq", "column", "od", "hexdump", "md5sum", "sha256sum"}
LOOKERS |= {"goto", "scroll_up", "scroll_down", "search_file", "search_dir", "find_file"}  # SWE-agent's viewer
GIT_LOOKS = {"status", "diff", "log", "show", "grep", "blame", "ls-files", "rev-parse", "branch"}
SEPARATORS = {"|", "||", "&&", ";", "&", "|&"}
REDIRECTS = {">", ">>", ">|", "&>", "&>>"}
OPTION_VALUES = {"head": {"-n", "-c"}, "tail": {"-n", "-c"}, "nl": {"-w", "-s", "-v", "-i", "-b"}}
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([\w.-]+)\1")


def reads(call: ToolCall) -> tuple[str, ...]:
    """The files the call shows the model some of: none for a call that reads no file."""
    args = _arguments(call)
    name = call.name.lower()
    if name in SHELL_TOOLS:
        return _shell_reads(_command(args))
    if name in EDITORS:
        return (_path(args),) if args.get("command") == "view" and _path(args) else ()
    if name in READ_TOOLS:
        return (_path(args),) if _path(args) else ()
    return ()


def may_write(call: ToolCall) -> bool:
    """Whether the call may have changed a file (or anything else a later call could see)."""
    args = _arguments(call)
    name = call.name.lower()
    if name in SHELL_TOOLS:
        return not _shell_only_looks(_command(args))
    if name in EDITORS:
        return args.get("command") != "view"
    return name not in READ_TOOLS and name not in LOOKING_TOOLS and name != "submit"


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments)
    except (ValueError, RecursionError):
        return {}
    return args if isinstance(args, dict) else {}


def _path(args: dict[str, Any]) -> str:
    for key in PATH_KEYS:
        if isinstance(args.get(key), str) and args[key].strip():
            return posixpath.normpath(args[key].strip())
    return ""


def _command(args: dict[str, Any]) -> str:
    command = args.get("command", args.get("cmd", ""))
    return " ".join(command) if isinstance(command, list) else str(command)


def _without_heredocs(command: str) -> str:
    """The command with each here-document's body left out (its lines are data, not commands)."""
    out, lines = [], iter(command.split("\n"))
    for line in lines:
        out.append(line)
        for marker in [m.group(2) for m in HEREDOC.finditer(line)]:
            for body in lines:
                if body.strip() == marker:
                    break
    return "\n".join(out)


def _segments(command: str) -> list[list[str]] | None:
    """The command line's simple commands, each as its words (redirections kept); None where it cannot be split
    (unbalanced quotes: then nothing is assumed about it)."""
    lexer = shlex.shlex(_without_heredocs(command).replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        return None
    out: list[list[str]] = [[]]
    for word in words:
        if word in SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [s for s in out if s]


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a simple command runs (environment assignments and `sudo` skipped), and its arguments."""
    i = 0
    while i < len(words) and ("=" in words[i] and not words[i].startswith("-") or words[i] == "sudo"):
        i += 1
    if i >= len(words):
        return "", []
    return posixpath.basename(words[i]), words[i + 1 :]


def _shell_reads(command: str) -> tuple[str, ...]:
    segments = _segments(command)
    found: list[str] = []
    for words in segments or []:
        program, args = _program(words)
        if program not in READERS and not (program == "sed" and "-n" in args and "-i" not in args):
            continue
        found += _files(program, args)
    return tuple(dict.fromkeys(found))


def _files(program: str, args: list[str]) -> list[str]:
    """A reading program's file arguments: options, their values, sed's script and redirections left out."""
    files, skip, script = [], False, program == "sed"
    for word in args:
        if skip:
            skip = False
            continue
        if word in REDIRECTS or word in ("<", "<<", "<<<", ">&"):
            skip = True
            continue
        if word.startswith("-") and word != "-":
            skip = word in OPTION_VALUES.get(program, set()) or (program == "sed" and word in ("-e", "--expression"))
            script = script and word not in ("-e", "--expression")
            continue
        if script:  # sed's first bare word is its script
            script = False
            continue
        files.append(posixpath.normpath(word))
        if program == "open":  # `open FILE [LINE]`
            break
    return files


def _shell_only_looks(command: str) -> bool:
    segments = _segments(command)
    if segments is None:
        return False
    for words in segments:
        for i, word in enumerate(words):
            if word in REDIRECTS:
                target = words[i + 1] if i + 1 < len(words) else ""
                if target != "/dev/null":
                    return False
        program, args = _program(words)
        if program not in LOOKERS:
            return False
        if program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args):
            return False
        if program == "find" and any(a in ("-delete", "-exec", "-execdir", "-fprint") for a in args):
            return False
        if program == "git" and (not args or args[0] not in GIT_LOOKS):
            return False
        if program == "xargs" and _program([a for a in args if not a.startswith("-")])[0] not in LOOKERS:
            return False
    return True
