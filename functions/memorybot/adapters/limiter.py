"""One limiter per process for model calls: how many in flight, how many per minute.

Every thread of an invocation (the extraction's verdicts, the nightly run's speakers, the
reply) takes a slot here before each model request, so the process never has more than
``max_in_flight`` requests open (HTTP pools are sized to the same number) and never starts
more than ``per_minute`` in any 60 seconds. Across Lambda instances the workers' reserved
concurrency bounds the sum.

The per-minute bound is a token bucket of ``burst`` tokens (one second's worth) refilled at
``(per_minute - burst) / 60`` a second: in any window of 60 s, at most burst + the refill =
``per_minute`` starts. A slot is reserved in arrival order; the wait happens outside the lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings


class LimiterTimeout(Exception):
    """No slot within the time the caller could wait."""


class ModelCallLimiter:
    def __init__(
        self,
        max_in_flight: int,
        per_minute: int = 0,  # 0: no per-minute bound
        *,
        period: float = 60.0,  # tests shrink the minute
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self.per_minute = max(0, per_minute)
        self._clock = clock
        self._sleep = sleep
        self._cond = threading.Condition()
        self._in_flight = 0
        self.peak_in_flight = 0
        self.started = 0
        if self.per_minute:
            # A burst of 1/60 of the allowance (one second's worth of a minute), the rest refilled.
            self._burst = max(1, round(self.per_minute / 60))
            self._rate = max(self.per_minute - self._burst, 1) / period  # tokens per second
            self._tokens = float(self._burst)
            self._stamp = clock()

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @contextmanager
    def slot(self, timeout: float | None = None) -> Iterator[None]:
        """Hold one in-flight slot for the block, started within the per-minute bound."""
        give_up = None if timeout is None else self._clock() + timeout
        with self._cond:
            while self._in_flight >= self.max_in_flight:
                left = None if give_up is None else give_up - self._clock()
                if left is not None and left <= 0:
                    raise LimiterTimeout("every model slot is busy")
                self._cond.wait(left)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            self._take_token(give_up)
            with self._cond:
                self.started += 1
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify()

    def _take_token(self, give_up: float | None) -> None:
        if not self.per_minute:
            return
        with self._cond:
            now = self._clock()
            self._tokens = min(float(self._burst), self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            self._tokens -= 1  # reserved: negative tokens are a queue of starts
            wait = -self._tokens / self._rate if self._tokens < 0 else 0.0
            if give_up is not None and now + wait > give_up:
                self._tokens += 1
                raise LimiterTimeout("the per-minute bound leaves no start in time")
        if wait > 0:
            self._sleep(wait)


@cache
def _shared(max_in_flight: int, per_minute: int) -> ModelCallLimiter:
    return ModelCallLimiter(max_in_flight, per_minute)


def process_limiter(settings: Settings) -> ModelCallLimiter:
    """The process's limiter: every backend built from the same settings shares it."""
    return _shared(max(1, settings.model_max_in_flight), max(0, settings.model_rpm))
