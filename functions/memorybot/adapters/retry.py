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

from ..core.ports import ModelFailed, ModelUnavailable
from .limiter import LimiterTimeout, ModelCallLimiter

if TYPE_CHECKING:
    from ..config import Settings

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
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.limiter = limiter
        self.budget = budget
        self._clock = clock
        self._sleep = sleep
        self._draw = draw

    def call(self, attempt: Callable[[float], T], what: str) -> T:
        policy = self.policy
        started: float | None = None
        deadline: float | None = None
        reason = "no attempt"
        transient = 0  # transient failures so far
        paid = 0  # the cost of the last retry, given back if the call then succeeds
        n = 0
        for n in range(policy.max_attempts):
            remaining = policy.deadline_seconds if deadline is None else deadline - self._clock()
            if remaining <= 0:
                break
            try:
                with self._slot(None if deadline is None else remaining):
                    if deadline is None:
                        started = self._clock()
                        deadline = started + policy.deadline_seconds
                        remaining = policy.deadline_seconds
                    answer = attempt(remaining)
            except LimiterTimeout:
                reason = "no free model slot"
                break
            except Throttled as exc:
                reason = exc.reason
                if n + 1 >= policy.max_attempts:
                    break
                # Never sooner than the server asked; the jitter on top keeps the callers it
                # turned away from all coming back in the same instant.
                delay = (exc.retry_after or 0.0) + policy.backoff(n, self._draw)
                assert deadline is not None
                if self._clock() + delay >= deadline:
                    break
                paid = 0
            except Retryable as exc:
                transient += 1
                assert started is not None
                delay = (exc.retry_after or 0.0) + policy.backoff(transient - 1, self._draw)
                if transient >= policy.transient_attempts:
                    raise ModelFailed(f"{exc.reason} ({what}: failed after {n + 1} attempt(s))") from exc
                if self._clock() + delay - started > min(policy.transient_window_seconds, policy.deadline_seconds):
                    raise ModelFailed(f"{exc.reason} ({what}: failed after {n + 1} attempt(s), no time left)") from exc
                paid = self.budget.spend(exc.timed_out) if self.budget is not None else 0
                if self.budget is not None and not paid:
                    raise ModelFailed(f"{exc.reason} ({what}: failed, retry budget empty)") from exc
            else:
                if self.budget is not None:
                    self.budget.succeeded(paid)
                return answer
            self._sleep(delay)
        raise ModelUnavailable(f"{reason} ({what}: gave up after {n + 1} attempt(s))")

    def _slot(self, timeout: float | None):
        if self.limiter is None:
            return _NO_SLOT
        return self.limiter.slot(timeout)


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

    return Retrier(
        RetryPolicy(deadline_seconds=settings.model_deadline_seconds),
        process_limiter(settings),
        budget=process_budget(),
    )
