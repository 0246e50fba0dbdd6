"""The program of a `run_code` call, as it runs inside the sandbox: standalone (it imports nothing of the
harness, and runs on any Python from 3.8), sent over stdin by the harness and started with `python3 -c BOOT`.

The first line on stdin holds this file's source and the start: the program, its functions (one per tool:
name, docstring, keyword parameters), the limits and, after a crash, the workspace's files as the first run
found them. From then on stdin and the original stdout are the channel, one JSON object per line: on a first
run the runner sends `scanned` (the files: path -> size and mtime) and waits for `go`; it sends `call` (a tool
and its arguments) and waits for the reply; it sends `out` (what the program printed, in chunks) and, last,
`done` (how the program ended, its error, the files it created, changed or deleted). File descriptors 1 and 2 point at /dev/null while the
program runs, so nothing it writes there can break a frame.

While the program runs, an audit hook refuses what a program of the harness does not do itself: open a
socket, start a process, load native code, or touch a file outside the workspace (it reads Python's own
files too). It makes the refusal a clear error; it is not a security boundary (the container is, or for a
local sandbox the user and network namespace).
"""

import inspect
import io
import json
import linecache
import os
import signal
import sys
import time
import traceback

PROGRAM = "<snippet>"  # the program's file name in tracebacks: its frames are the ones shown
SKIPPED_DIRS = {".git", "__pycache__", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
MAX_SCANNED = 50000  # files compared before and after; a larger workspace is not accounted for
FLUSH_CHARS = 8192
FLUSH_S = 0.5
SHOWN_FRAMES = 5


class ToolError(Exception):
    """A tool call from the program failed: the message is what a direct call of the tool would have shown."""

    def __init__(self, message, tool="", status="error"):
        super().__init__(message)
        self.tool = tool
        self.status = status


ToolError.__module__ = "builtins"  # shown as `ToolError: ...` in the program's traceback


class Ended(BaseException):
    """The snippet ends here (a write that changed the world under it, too many calls, a time limit, a flood
    of output): a BaseException, so that the program's `except Exception` does not swallow it."""

    def __init__(self, outcome, message):
        super().__init__(message)
        self.outcome = outcome


class Channel:
    def __init__(self, out_fd, reader, limits):
        self.out_fd = out_fd
        self.reader = reader
        self.limit = limits["max_output_chars"]
        self.printed = 0
        self.pending = []
        self.pending_chars = 0
        self.flushed_at = time.monotonic()

    def send(self, frame):
        data = (json.dumps(frame) + "\n").encode("utf-8", "surrogatepass")
        while data:
            data = data[os.write(self.out_fd, data) :]

    def printed_text(self, text):
        """What the program printed: past the limit it is dropped and the program ends."""
        if self.printed >= self.limit:
            raise Ended("flood", f"printed more than {self.limit} characters")
        room = self.limit - self.printed
        self.printed += len(text)
        self.pending.append(text[:room])
        self.pending_chars += min(len(text), room)
        if self.pending_chars >= FLUSH_CHARS or time.monotonic() - self.flushed_at > FLUSH_S:
            self.flush()
        if self.printed > self.limit:
            raise Ended("flood", f"printed more than {self.limit} characters")

    def flush(self):
        if self.pending:
            self.send({"op": "out", "text": "".join(self.pending)})
        self.pending, self.pending_chars, self.flushed_at = [], 0, time.monotonic()

    def call(self, tool, args):
        self.flush()
        self.send({"op": "call", "tool": tool, "args": args})
        line = self.reader.readline()
        if not line:
            raise Ended("lost", "the harness closed the channel")
        reply = json.loads(line)
        if reply.get("end"):
            raise Ended("ended", reply["end"])
        if not reply["ok"]:
            raise ToolError(reply["text"], tool, reply.get("status", "error"))
        return reply["text"]


class Printed(io.TextIOBase):
    """sys.stdout and sys.stderr of the program."""

    def __init__(self, channel):
        self.channel = channel

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self.channel.printed_text(text)
        return len(text)


def function(channel, spec):
    """The program's function for one tool: keyword arguments only, checked by the harness as a direct call's."""
    name, tool = spec["name"], spec["tool"]

    def call(*args, **kwargs):
        if args:
            example = ", ".join(f"{p['name']}=..." for p in spec["params"] if p["required"])
            raise TypeError(f"{name}() takes keyword arguments only, e.g. {name}({example})")
        try:
            json.dumps(kwargs)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"the arguments of {name}() must be JSON values (str, int, float, bool, None, list, dict): {e}"
            ) from None
        return channel.call(tool, kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = spec["doc"]
    call.__signature__ = inspect.Signature(
        [
            inspect.Parameter(
                p["name"],
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if p["required"] else p.get("default"),
            )
            for p in spec["params"]
            if p["name"].isidentifier()
        ]
    )
    return call


def scan(root):
    """Every file under `root` (skipping caches and .git): relative path -> (size, mtime in ns); None when
    there are too many to compare."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for n in names:
            path = os.path.join(folder, n)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            files[os.path.relpath(path, root)] = [st.st_size, st.st_mtime_ns]
            if len(files) > MAX_SCANNED:
                return None
    return files


def changes(before, after):
    if before is None or after is None:
        return None
    return {
        "created": sorted(set(after) - set(before)),
        "deleted": sorted(set(before) - set(after)),
        "changed": sorted(p for p in set(before) & set(after) if not unchanged(before[p], after[p])),
    }


def unchanged(then, now):
    """The same (size, mtime in ns), or the times a Docker checkpoint gives back: a world restored from one has
    its files' times cut to whole seconds (an image layer keeps no finer ones), which no write makes."""
    return now == then or (now[0] == then[0] and now[1] == then[1] - then[1] % 1_000_000_000)


class Guard:
    """The audit hook: on while the program runs."""

    NETWORK = ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto")
    PROCESS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty")
    NATIVE = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata")
    # event -> the positions of its arguments that are paths it writes
    WRITES = {
        "os.remove": (0,),
        "os.rename": (0, 1),
        "os.rmdir": (0,),
        "os.mkdir": (0,),
        "os.symlink": (1,),
        "os.link": (1,),
        "os.truncate": (0,),
        "os.chmod": (0,),
        "os.chown": (0,),
        "os.utime": (0,),
        "shutil.rmtree": (0,),
    }
    READS = {"os.listdir": (0,), "os.scandir": (0,)}
    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self, workdir, readable):
        self.on = False
        self.workdir = os.path.realpath(workdir)
        self.readable = [os.path.realpath(p) for p in readable if p] + [self.workdir]

    def __call__(self, event, args):
        if not self.on:
            return
        if event in self.NETWORK:
            self.refuse(f"a run_code program has no network ({event.split('.')[1]}); reach the world through the tools")
        if event in self.PROCESS or event.startswith("os.exec") or event.startswith("os.spawn"):
            self.refuse("a run_code program starts no process itself; run commands with shell(command=...)")
        if event in self.NATIVE:
            self.refuse("a run_code program loads no native code (ctypes)")
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(flags & self.WRITE_FLAGS)
            self.check(path, writes)
        elif event in self.WRITES:
            for i in self.WRITES[event]:
                self.check(args[i], True)
        elif event in self.READS:
            self.check(args[0] if args[0] is not None else ".", False)

    def check(self, path, writes):
        if isinstance(path, int) or path is None:
            return  # a file descriptor the program already holds
        name = os.fsdecode(path)
        real = os.path.realpath(name)
        roots = [self.workdir] if writes else self.readable
        if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            what = "write" if writes else "read"
            self.refuse(
                f"a run_code program may not {what} {name}: it is outside the workspace {self.workdir}; "
                "use the tools for anything else"
            )

    def refuse(self, message):
        self.on = False  # raising must not trip the hook again (the traceback machinery opens files)
        try:
            raise PermissionError(message)
        finally:
            self.on = True


def program_error(e):
    """The exception as the program's last frames, never the runner's."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == PROGRAM][-SHOWN_FRAMES:]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(e), e)
    return "".join(lines).rstrip()


def run(start):
    reader = sys.stdin.buffer
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    channel = Channel(out_fd, reader, start["limits"])
    code = start["code"]
    linecache.cache[PROGRAM] = (len(code), None, code.splitlines(True), PROGRAM)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "ToolError": ToolError}
    for spec in start["functions"]:
        namespace[spec["name"]] = function(channel, spec)
    workdir = os.getcwd()
    sys.path.insert(0, workdir)
    guard = Guard(workdir, [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path, os.devnull])
    sys.addaudithook(guard)
    if "before" in start:  # a run after a crash: compared with what the first run found
        before = start["before"]
    else:
        before = scan(workdir)
        channel.send({"op": "scanned", "files": before})
        if json.loads(reader.readline() or "{}").get("op") != "go":
            os._exit(0)  # the harness is gone
    outcome, error = "ok", None

    def time_up(signum, frame):
        raise Ended("timeout", f"the program ran past its time limit of {start['limits']['timeout_s']:g} s")

    sys.stdin = io.StringIO("")
    sys.stdout = sys.stderr = Printed(channel)
    try:
        compiled = compile(code, PROGRAM, "exec")
    except (SyntaxError, ValueError) as e:
        outcome, error = "syntax", "".join(traceback.format_exception_only(type(e), e)).rstrip()
    else:
        signal.signal(signal.SIGALRM, time_up)
        signal.setitimer(signal.ITIMER_REAL, start["limits"]["timeout_s"])
        guard.on = True
        try:
            exec(compiled, namespace)
        except Ended as e:
            guard.on = False
            outcome, error = e.outcome, str(e)
            where = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == PROGRAM]
            if where and e.outcome in ("timeout", "flood"):
                error += f" (stopped at line {where[-1].lineno}: {(where[-1].line or '').strip()})"
        except SystemExit as e:
            guard.on = False
            if e.code not in (None, 0):
                outcome, error = "error", f"the program called exit({e.code!r})"
        except BaseException as e:  # the program's own error, KeyboardInterrupt included
            guard.on = False
            outcome, error = "error", program_error(e)
        finally:
            guard.on = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    sys.stdout = sys.stderr = sys.__stdout__
    try:
        channel.flush()
    except Ended:
        pass
    channel.send({"op": "done", "outcome": outcome, "error": error, "changes": changes(before, scan(workdir))})
    os._exit(0)  # threads the program left behind end with it
