"""The engine's one thread and its inbox.

One background thread owns the model and the scheduler: it runs a setup function
(loading the weights), then, while there is work, applies the changes other threads
queued in the inbox and runs one step. Other threads never touch the model: they
`post` a change, which costs a short lock, never a wait for a step (a lock held across
steps starves callers: the loop thread takes it back before a waiter wakes).

All torch work stays on that one thread because torch's OpenMP runtime gives every
thread that runs parallel ops its own worker team, and once the teams together hold
more threads than there are cores its workers stop spin-waiting between the hundreds
of small parallel regions of a decode step: on the 2-core box this engine was tuned
on, a step ran 1.5-2x slower as soon as a second thread had run a parallel torch op.
"""

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

log = logging.getLogger("engine")

T = TypeVar("T")


class Loop:
    def __init__(self) -> None:
        self.inbox: list[Callable[[], None]] = []  # changes for the loop thread to apply
        self.work = threading.Condition()  # guards the inbox and `stopped`
        self.lock = threading.Lock()  # held by the loop thread around each round of changes and a step
        self.stopped = False
        self.thread: threading.Thread | None = None

    def start(
        self,
        setup: Callable[[], None],
        step: Callable[[], object],
        has_work: Callable[[], bool],
        on_step_error: Callable[[Exception], None],
        name: str = "engine-loop",
    ) -> None:
        """Run `setup` on a new thread, then loop there: `step` while `has_work`, `on_step_error` when a step
        raises (the loop goes on after it). Setup's exception is raised here.

        Only the running thread holds the functions (and so the engine they belong to): once `stop` has
        ended it, nothing here keeps the engine alive, and dropping the engine frees its memory at once."""
        ready: Future = Future()

        def main() -> None:
            try:
                setup()
            except BaseException as e:
                self.stopped = True
                ready.set_exception(e)
                return
            ready.set_result(None)
            self._run(step, has_work, on_step_error)

        self.thread = threading.Thread(target=main, name=name, daemon=True)
        self.thread.start()
        ready.result()

    def post(self, change: Callable[[], None], register: Callable[[], None] | None = None) -> bool:
        """Queue a change for the loop thread; False when stopped. `register` runs in the same
        critical section, so a concurrent `stop` either sees what it records or refuses it."""
        with self.work:
            if self.stopped:
                return False
            if register is not None:
                register()
            self.inbox.append(change)
            self.work.notify()
        return True

    def call(self, fn: Callable[[], T]) -> tuple[bool, Future[T]]:
        """Run fn on the loop thread between two steps; (False, _) when stopped, else the
        future of its result."""
        result: Future[T] = Future()

        def change() -> None:
            try:
                result.set_result(fn())
            except BaseException as e:
                result.set_exception(e)

        return self.post(change), result

    def stop(self) -> None:
        with self.work:
            self.stopped = True
            self.inbox.clear()
            self.work.notify_all()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=10)

    def _run(
        self, step: Callable[[], object], has_work: Callable[[], bool], on_step_error: Callable[[Exception], None]
    ) -> None:
        while True:
            with self.work:
                while not self.inbox and not has_work() and not self.stopped:
                    self.work.wait()
                if self.stopped:
                    return
                changes, self.inbox = self.inbox, []
            with self.lock:
                for change in changes:
                    try:
                        change()
                    except Exception:  # a change that fails must not take the loop down with it
                        log.exception("engine: applying a queued change failed")
                try:
                    step()
                except Exception as e:
                    on_step_error(e)
