"""Stopping runs from outside the process: SIGINT (Ctrl-C) and SIGTERM (systemd, Kubernetes, Ray, a CI timeout).

A signal never cuts a run short in the middle of a journal write. While `signals_handled` is in force, the first
SIGINT or SIGTERM asks every run of the process to stop: each run notices at its next safe point (before a model
call, after a reply or an observation is journaled) and stops as `interrupted`, with its snapshot and summary. What
happens to the call in flight is the policy's `checkpoint.on_signal`: `finish` lets it run to its end and journals
its result; `abandon` stops it at once (a command is killed as at a timeout, a model request is dropped) and leaves
it as a crash would, for the resume to settle. A second signal abandons whatever is still in flight.

Sandboxes ask `abandoning()` while a command runs; the loop's safe points (`check()`: before each step, before each
tool call and again between its write-ahead intent and its run, before each model call) raise `Abandoned` once a stop
was asked for; a model call runs inside `abandonable()`, where (in the main thread) the signal handler raises
`Abandoned` itself. So a run stops at the first safe point after its last journaled event, whatever the moment of the
signal: a replay that asks for the stop right after that event stops where the run did.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SIGNALS = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
EXIT_CODES = {"SIGINT": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}  # what a shell reports for either


class Abandoned(BaseException):
    """A call stopped by a signal before it ended. A BaseException, so that no `except Exception` (the dispatcher's,
    a tool's) turns it into an observation: nothing about the call is journaled, as after a crash."""

    def __init__(self, signal_name: str):
        super().__init__(f"abandoned on {signal_name}")
        self.signal_name = signal_name


@dataclass
class _State:
    signal_name: str | None = None  # the first signal received
    count: int = 0  # signals received
    abandon_first: bool = True  # the policy's checkpoint.on_signal == "abandon"
    installed: int = 0  # nesting depth of signals_handled in the main thread
    raisable: int = 0  # nesting depth of abandonable() in the main thread


_state = _State()
_lock = threading.Lock()


def requested() -> str | None:
    """The signal that asked the process's runs to stop, or None."""
    return _state.signal_name


def abandoning() -> bool:
    """Whether the call in flight should be stopped now rather than run to its end."""
    return _state.count > (0 if _state.abandon_first else 1)


def request(signal_name: str) -> None:
    """What a signal does (and what a test or a replay does to act as one)."""
    with _lock:
        _state.signal_name = _state.signal_name or signal_name
        _state.count += 1


def received() -> int:
    """How many stops were asked for (signals, and requests made as a signal would)."""
    return _state.count


def clear() -> None:
    """Forget the requests, once the runs they stopped have stopped."""
    with _lock:
        _state.signal_name, _state.count = None, 0


def _handle(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    request(name)
    if _state.raisable and abandoning():
        raise Abandoned(name)


def check() -> None:
    """A safe point: raise `Abandoned` once a stop was asked for (the loop catches it and stops the run)."""
    if _state.signal_name is not None:
        raise Abandoned(_state.signal_name)


@contextmanager
def signals_handled(abandon_first: bool = True) -> Iterator[None]:
    """SIGINT and SIGTERM ask runs to stop (see the module) instead of killing the process, while in force.
    `abandon_first`: the run's policy says to abandon the call in flight at the first signal. Only the main
    thread can take signals: elsewhere (a batch's worker threads) this only sets that choice, and the main
    thread's handler, installed by the command, serves every run. Nested uses keep the outermost handlers and
    set the choice for their time; the requests are forgotten when the outermost one ends."""
    main = threading.current_thread() is threading.main_thread()
    outermost = main and not _state.installed
    previous_choice, _state.abandon_first = _state.abandon_first, abandon_first
    previous = {s: signal.getsignal(s) for s in SIGNALS} if outermost else {}
    for s in previous:
        signal.signal(s, _handle)
    _state.installed += main
    try:
        yield
    finally:
        if main:
            _state.installed -= 1
            _state.abandon_first = previous_choice
        for s, handler in previous.items():
            signal.signal(s, handler)
        if outermost:
            clear()


@contextmanager
def abandonable() -> Iterator[None]:
    """A call (a model request) that the signal handler may end by raising `Abandoned` in the main thread. It
    begins with a safe point: nothing starts once a stop was asked for."""
    check()
    main = threading.current_thread() is threading.main_thread()
    _state.raisable += main
    try:
        yield
    finally:
        _state.raisable -= main
