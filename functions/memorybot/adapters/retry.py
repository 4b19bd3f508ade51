"""One retry policy for every model backend: a throttle is "not yet", a failing service is "failed".

A backend only classifies its own errors (see docs/failure-and-retries.md):

- ``Throttled``: the service said "slow down" (HTTP 429, ``ThrottlingException``, or a 5xx that
  came with a Retry-After). Retried with capped exponential backoff and full jitter, added to
  the server's Retry-After (never sooner than asked), while the call's deadline allows; then
  ``ModelUnavailable``: "not yet", the job fails before applying anything and runs again.
- ``Transient`` (any other ``Retryable``): a server error, a timeout, a dropped connection. A
  few quick retries (``transient_attempts`` attempts in all, none started later than
  ``transient_window_seconds`` after the first), each paid for from the process's
  ``RetryBudget``; then ``ModelFailed``: the call has failed, "no answer", and the core applies
  the design's rule for that one call (the record is left untouched, the memory kept...).
- Anything else (``ModelError``: a malformed or out-of-range answer, a 4xx) passes through at once.

Each attempt holds a slot of the process's ``ModelCallLimiter`` (in flight and per minute);
the deadline starts when the first attempt gets its slot, so waiting in the process's own
queue is not mistaken for the model being unavailable.

The retry budget follows the AWS SDKs' "standard" retry mode: a token bucket per process; a
transient retry costs ``retry_cost`` tokens (``timeout_cost`` after a timeout), a call that
succeeds at once puts one back, a call that succeeds after retrying gives back its last retry's
cost. When the bucket cannot pay, the call is not retried: a service that is down gets one
attempt per call instead of three from every call at once. Throttle retries are not charged:
the server's Retry-After, the limiter and the deadline already pace them, and charging them
would turn a busy quota ("not yet", nothing lost) into failed calls.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from typing import TYPE_CHECKING, TypeVar

from ..core.record.ports import ModelFailed, ModelUnavailable
from .limiter import LimiterTimeout, ModelCallLimiter

if TYPE_CHECKING:
    from ..config import Settings
    from .metering import ModelMeter

T = TypeVar("T")


class Retryable(Exception):
    """Worth asking again. Raised as such it is transient (see ``Throttled``). Messages carry no
    prompt text."""

    def __init__(self, reason: str, retry_after: float | None = None, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.timed_out = timed_out


class Transient(Retryable):
    """A server error, a timeout, a connection that failed: a few quick retries, then failed."""


class Throttled(Retryable):
    """The service asked us to slow down: retried until the deadline, then "not yet"."""


@dataclass(frozen=True)
class RetryPolicy:
    deadline_seconds: float = 60.0  # throttles: from the first attempt to "not yet"
    base_delay: float = 0.25  # the first backoff's cap; doubled each attempt
    max_delay: float = 10.0
    max_attempts: int = 30  # the deadline is the real bound; throttled attempts cost nothing
    transient_attempts: int = 3  # server errors and timeouts: attempts in all, then failed
    transient_window_seconds: float = 10.0  # no transient retry starts later than this after the first attempt

    def backoff(self, retry: int, draw: Callable[[], float]) -> float:
        """Full jitter: uniform in [0, min(max_delay, base_delay * 2**retry))."""
        return draw() * min(self.max_delay, self.base_delay * 2**retry)


# The AWS SDKs' standard retry mode uses 500 tokens, 5 a retry, 10 after a timeout, 1 back per
# success. One Lambda instance makes far fewer calls than an SDK client in a long-lived server,
# so the bucket is smaller: 20 retries (10 after timeouts) before it must be earned back.
BUDGET_CAPACITY = 100
RETRY_COST = 5
TIMEOUT_RETRY_COST = 10
SUCCESS_REFILL = 1


class RetryBudget:
    """A token bucket of retries, shared by every model call of the process (thread-safe)."""

    def __init__(
        self,
        capacity: int = BUDGET_CAPACITY,
        *,
        retry_cost: int = RETRY_COST,
        timeout_cost: int = TIMEOUT_RETRY_COST,
        success_refill: int = SUCCESS_REFILL,
    ) -> None:
        self.capacity = capacity
        self.retry_cost = retry_cost
        self.timeout_cost = timeout_cost
        self.success_refill = success_refill
        self._tokens = capacity
        self._lock = threading.Lock()
        self.refused = 0  # retries not made for want of tokens

    @property
    def tokens(self) -> int:
        with self._lock:
            return self._tokens

    def spend(self, timed_out: bool = False) -> int:
        """Pay for one retry: the cost paid, or 0 when the bucket cannot pay (then no retry)."""
        cost = self.timeout_cost if timed_out else self.retry_cost
        with self._lock:
            if self._tokens < cost:
                self.refused += 1
                return 0
            self._tokens -= cost
            return cost

    def succeeded(self, last_retry_cost: int = 0) -> None:
        """A call answered: give back its last retry's cost, or one token if it needed none."""
        with self._lock:
            self._tokens = min(self.capacity, self._tokens + (last_retry_cost or self.success_refill))


class Retrier:
    """Runs ``attempt(remaining_seconds)`` under the policy and, if given, the limiter and the budget."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        limiter: ModelCallLimiter | None = None,
        *,
        budget: RetryBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        draw: Callable[[], float] = random.random,
        meter: ModelMeter | None = None,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.meter = meter  # told of each throttled attempt and each attempt repeated
        self.limiter = limiter
        self.budget = budget
        self._clock = clock
        self._sleep = sleep
        self._draw = draw

    def call(self, attempt: Callable[[float], T], what: str) -> T:
        """``attempt(remaining_seconds)``'s answer: throttles retried while the deadline allows (then
        ``ModelUnavailable``), transient failures a few times (then ``ModelFailed``)."""
        call = _Call(self.policy, self._clock)
        n = 0
        for n in range(self.policy.max_attempts):
            remaining = call.remaining()
            if remaining <= 0:
                break
            try:
                with self._slot(None if call.started is None else remaining):
                    answer = attempt(call.start() if call.started is None else remaining)
            except LimiterTimeout:
                call.reason = "no free model slot"
                break
            except Throttled as exc:
                if self.meter is not None:
                    self.meter.throttled()
                delay = call.throttled(exc, n, self._draw)
                if delay is None:
                    break
            except Retryable as exc:
                delay = call.transient(exc, n, what, self._draw, self.budget)
            else:
                if self.budget is not None:
                    self.budget.succeeded(call.paid)
                return answer
            if self.meter is not None:
                self.meter.retried()
            self._sleep(delay)
        raise ModelUnavailable(f"{call.reason} ({what}: gave up after {n + 1} attempt(s))")

    def _slot(self, timeout: float | None):
        if self.limiter is None:
            return _NO_SLOT
        return self.limiter.slot(timeout)


class _Call:
    """One call's attempts under the policy: its deadline (from when the first attempt got its
    slot), the transient failures so far, and what the last retry cost (given back on success)."""

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float]) -> None:
        self.policy = policy
        self._clock = clock
        self.started: float | None = None
        self.reason = "no attempt"
        self.transients = 0
        self.paid = 0

    def remaining(self) -> float:
        if self.started is None:
            return self.policy.deadline_seconds
        return self.started + self.policy.deadline_seconds - self._clock()

    def start(self) -> float:
        """The first attempt has its slot: the deadline runs from now. The time it may take."""
        self.started = self._clock()
        return self.policy.deadline_seconds

    def throttled(self, exc: Throttled, n: int, draw: Callable[[], float]) -> float | None:
        """The wait before the next attempt, or None when none is left before the deadline."""
        self.reason = exc.reason
        if n + 1 >= self.policy.max_attempts:
            return None
        # Never sooner than the server asked; the jitter on top keeps the callers it turned away
        # from all coming back in the same instant.
        delay = (exc.retry_after or 0.0) + self.policy.backoff(n, draw)
        if delay >= self.remaining():
            return None
        self.paid = 0
        return delay

    def transient(
        self, exc: Retryable, n: int, what: str, draw: Callable[[], float], budget: RetryBudget | None
    ) -> float:
        """The wait before the next attempt; ``ModelFailed`` when the transient retries are spent:
        too many, past the window, or not paid for by the process's budget."""
        self.transients += 1
        assert self.started is not None  # an attempt ran, so it had its slot
        delay = (exc.retry_after or 0.0) + self.policy.backoff(self.transients - 1, draw)
        if self.transients >= self.policy.transient_attempts:
            raise ModelFailed(f"{exc.reason} ({what}: failed after {n + 1} attempt(s))") from exc
        window = min(self.policy.transient_window_seconds, self.policy.deadline_seconds)
        if self._clock() + delay - self.started > window:
            raise ModelFailed(f"{exc.reason} ({what}: failed after {n + 1} attempt(s), no time left)") from exc
        self.paid = budget.spend(exc.timed_out) if budget is not None else 0
        if budget is not None and not self.paid:
            raise ModelFailed(f"{exc.reason} ({what}: failed, retry budget empty)") from exc
        return delay


class _NoSlot:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SLOT = _NoSlot()


def retry_after_seconds(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """The server's requested wait: ``retry-after-ms`` (OpenAI), else ``Retry-After`` in seconds
    or as an HTTP date. None when absent or unreadable; never negative."""
    lowered = {str(k).lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        raw = lowered.get("retry-after")
        if raw is None:
            return None
        try:
            return max(0.0, float(raw))
        except ValueError:
            return max(0.0, parsedate_to_datetime(raw).timestamp() - now())
    except (TypeError, ValueError, OverflowError):
        return None


@cache
def process_budget() -> RetryBudget:
    """The process's retry budget: every backend of the process draws from it."""
    return RetryBudget()


def retrier_for(settings: Settings) -> Retrier:
    """The deployed policy: the configured deadline, the process's shared limiter and retry budget."""
    from .limiter import process_limiter
    from .metering import meter_for

    return Retrier(
        RetryPolicy(deadline_seconds=settings.model_deadline_seconds),
        process_limiter(settings),
        budget=process_budget(),
        meter=meter_for(settings),
    )
