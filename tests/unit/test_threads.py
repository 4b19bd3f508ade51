"""Threads kept between runs (``core/record/threads.py``), and the extractor's use of them: a turn's
model calls start on threads the turns before left waiting, never queued behind another turn's,
and a turn ends only when every one of its calls has."""

from __future__ import annotations

import gc
import threading
import weakref
from datetime import timedelta

import pytest

from fakes import T0, Clock, FakeMemoryStore, ScriptedChat, ScriptedJev, memory, message, speaker
from memorybot.core.record.domain import GLOBAL_SCOPE, Verdict
from memorybot.core.record.threads import Tasks, WarmThreads
from memorybot.core.turn.extraction import Extractor

WAIT = 5.0  # generous: only a broken pool ever waits this long


def test_every_task_starts_at_once_even_past_the_threads_kept():
    threads = WarmThreads(keep=2)
    started = threading.Barrier(6, timeout=WAIT)  # passes only when all six run at the same time
    futures = [threads.submit(started.wait) for _ in range(6)]
    assert all(f.result(timeout=WAIT) is not None for f in futures)


def test_a_thread_that_finished_runs_the_next_task_and_only_keep_threads_wait():
    threads = WarmThreads(keep=2)
    release = threading.Event()
    first = [threads.submit(lambda: (release.wait(WAIT), threading.get_ident())[1]) for _ in range(5)]
    release.set()
    idents = {f.result(timeout=WAIT) for f in first}
    _until(lambda: threads.idle == 2)
    assert threads.idle == 2  # three of the five ended

    later = {threads.submit(threading.get_ident).result(timeout=WAIT) for _ in range(4)}
    assert later <= idents  # run by threads the first tasks left waiting, none new


def test_a_task_s_result_and_exception_reach_its_future():
    threads = WarmThreads(keep=1)
    assert threads.submit(lambda a, b=0: a + b, 2, b=3).result(timeout=WAIT) == 5
    with pytest.raises(ZeroDivisionError):
        threads.submit(lambda: 1 / 0).result(timeout=WAIT)
    assert threads.submit(lambda: "still serving").result(timeout=WAIT) == "still serving"


def test_a_waiting_thread_holds_nothing_of_the_task_it_ran():
    class Exchange:  # stands in for a person's words a rewrite was given
        pass

    threads = WarmThreads(keep=1)
    given = Exchange()
    seen = weakref.ref(given)
    threads.submit(lambda e: None, given).result(timeout=WAIT)
    _until(lambda: threads.idle == 1)
    del given
    gc.collect()
    assert seen() is None


class AtOnce:
    """Counts how many calls are inside ``during()`` at once; each stays 20 ms."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0
        self.peak = 0
        self.done = 0

    def during(self):
        with self._lock:
            self._running += 1
            self.peak = max(self.peak, self._running)
        threading.Event().wait(0.02)
        with self._lock:
            self._running -= 1
            self.done += 1


def test_a_run_s_tasks_keep_to_its_limit_and_its_with_waits_for_every_one():
    threads, at_once = WarmThreads(keep=8), AtOnce()

    def call(i):
        at_once.during()
        return i

    with Tasks(threads, limit=3) as tasks:
        futures = [tasks.submit(call, i) for i in range(9)]
    assert at_once.done == 9  # leaving the with waited for all of them
    assert at_once.peak == 3
    assert [f.result() for f in futures] == list(range(9))


def test_a_failing_task_does_not_stop_the_run_s_others():
    threads = WarmThreads(keep=2)
    with Tasks(threads, limit=1) as tasks:
        failed = tasks.submit(lambda: 1 / 0)
        after = tasks.submit(lambda: "ran")
    assert isinstance(failed.exception(), ZeroDivisionError)
    assert after.result() == "ran"


def _until(condition, timeout=WAIT):
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        done.wait(0.01)


# --- the extractor ---------------------------------------------------------------


class NamingChat(ScriptedChat):
    """Records the thread each memory text is written on."""

    def __init__(self):
        super().__init__()
        self.threads: list[str] = []

    def write_memory(self, exchange, current):
        with self._lock:
            self.threads.append(threading.current_thread().name)
        threading.Event().wait(0.02)  # a model's latency: every text of a turn is written at once
        return super().write_memory(exchange, current)


def _updating_jev():
    jev = ScriptedJev(worth=0.9, add=0.9)
    jev.default_verdict = Verdict.UPDATE
    return jev


def _turn(extractor, store, n):
    store.seed(*(memory("100", f"m{c}222", f"fact {c}", at=T0) for c in "abcdefghjk"[:n]))
    said = [message("100", "I moved to Osaka", name="alice", at=T0 + timedelta(minutes=1))]
    return extractor.run(speaker("100", "alice"), GLOBAL_SCOPE, said)


def test_a_turn_s_rewrites_run_on_the_threads_the_turn_before_left_waiting():
    store = FakeMemoryStore()
    jev, chat = _updating_jev(), NamingChat()
    extractor = Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)))
    first = _turn(extractor, store, 10)
    assert len(first.updated) == 10 and len(first.added) == 1
    before = set(chat.threads)
    chat.threads.clear()
    second = _turn(extractor, store, 10)
    assert len(second.updated) == 10
    assert len(chat.threads) == 11 and set(chat.threads) <= before  # the draft and ten rewrites, no new thread


def test_a_turn_keeps_to_its_concurrency_on_the_shared_threads():
    store, at_once = FakeMemoryStore(), AtOnce()

    class SlowChat(ScriptedChat):
        def write_memory(self, exchange, current):
            at_once.during()
            return super().write_memory(exchange, current)

    extractor = Extractor(store, _updating_jev(), SlowChat(), clock=Clock(T0 + timedelta(days=1)), concurrency=2)
    result = _turn(extractor, store, 6)
    assert len(result.updated) == 6
    assert at_once.peak == 3  # MEMORYBOT_MODEL_CONCURRENCY 2: two calls and the draft, at most, at once
