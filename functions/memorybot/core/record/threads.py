"""Threads kept between runs, for work that fans out to model calls.

A ``ThreadPoolExecutor`` made per run starts a thread for each task, on the path: a turn that
updates ten memories started eleven threads after the decision came back, each start handing
the interpreter lock back and forth, and the last rewrite left that much later. A pool kept
for the process's life would queue one run's tasks behind another's when runs overlap (the
nightly run extracts many speakers at once), and a queued rewrite waits a whole model call.

``WarmThreads`` does neither: a task starts at once, on an idle thread or, when none is idle, on
a new one, and up to ``keep`` idle threads are kept for the next run (a run's worth); the others
end when their task does.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from queue import SimpleQueue
from typing import Any

_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class WarmThreads(Executor):
    """Each task at once on its own thread; up to ``keep`` threads wait, idle, for the next.
    Thread-safe. Idle threads are daemons: a process may end with them waiting."""

    def __init__(self, keep: int, *, name: str = "warm") -> None:
        self._keep = max(0, keep)
        self._name = name
        self._idle: list[SimpleQueue[_Task]] = []  # the last to finish is the first reused
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        task: _Task = (Future(), fn, args, kwargs)
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                self._started += 1
                name = f"{self._name}-{self._started}"
        if inbox is not None:
            inbox.put(task)
            return task[0]
        # The task goes through the new thread's inbox, not its arguments, which the thread
        # would hold for as long as it lives.
        inbox = SimpleQueue()
        inbox.put(task)
        threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        return task[0]

    @property
    def idle(self) -> int:
        """Threads waiting for a task now."""
        with self._lock:
            return len(self._idle)

    def _serve(self, inbox: SimpleQueue[_Task]) -> None:
        while True:  # an idle thread holds nothing of the task it ran
            _run(inbox.get())
            with self._lock:
                if len(self._idle) >= self._keep:
                    return
                self._idle.append(inbox)


class Tasks(Executor):
    """One run's tasks on shared threads, at most ``limit`` of them running at once (the others
    start, in order, as running ones end). Leaving its ``with`` (``shutdown``) waits until every
    task submitted has ended, as leaving a pool made for the run did: nothing of the run goes on
    after it, and what its tasks counted is complete."""

    def __init__(self, threads: Executor, limit: int) -> None:
        self._threads = threads
        self._limit = max(1, limit)
        self._running = 0
        self._waiting: deque[_Task] = deque()
        self._futures: list[Future[Any]] = []
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        task: _Task = (Future(), fn, args, kwargs)
        with self._lock:
            self._futures.append(task[0])
            start = self._running < self._limit
            if start:
                self._running += 1
            else:
                self._waiting.append(task)
        if start:
            self._threads.submit(self._run_then_next, task)
        return task[0]

    def _run_then_next(self, task: _Task) -> None:
        while True:
            _run(task)
            with self._lock:
                if not self._waiting:
                    self._running -= 1
                    return
                task = self._waiting.popleft()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            futures = list(self._futures)
        if wait:
            concurrent.futures.wait(futures)


def _run(task: _Task) -> None:
    future, fn, args, kwargs = task
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the task's failure is its future's
        future.set_exception(exc)
    else:
        future.set_result(result)
