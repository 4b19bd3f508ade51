"""One retry policy for every model backend: throttles and transient failures are "not yet".

A backend only classifies its own errors: it raises ``Retryable`` for a throttle or a
transient failure (with the server's Retry-After, when it gave one) and ``ModelError`` for
anything else. ``Retrier.call`` retries ``Retryable`` with capped exponential backoff and
full jitter, added to the server's Retry-After (never sooner than asked), while the call's
deadline allows; then it raises ``ModelUnavailable``. Every other exception passes through at once: a malformed or
out-of-range answer is not retried.

Each attempt holds a slot of the process's ``ModelCallLimiter`` (in flight and per minute);
the deadline starts when the first attempt gets its slot, so waiting in the process's own
queue is not mistaken for the model being unavailable.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from ..core.ports import ModelUnavailable
from .limiter import LimiterTimeout, ModelCallLimiter

T = TypeVar("T")


class Retryable(Exception):
    """A throttle or a transient failure: worth asking again. Messages carry no prompt text."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    deadline_seconds: float = 60.0  # from the first attempt to giving up
    base_delay: float = 0.25  # the first backoff's cap; doubled each attempt
    max_delay: float = 10.0
    max_attempts: int = 30  # the deadline is the real bound; throttled attempts cost nothing

    def backoff(self, retry: int, draw: Callable[[], float]) -> float:
        """Full jitter: uniform in [0, min(max_delay, base_delay * 2**retry))."""
        return draw() * min(self.max_delay, self.base_delay * 2**retry)


class Retrier:
    """Runs ``attempt(remaining_seconds)`` under the policy and, if given, the limiter."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        limiter: ModelCallLimiter | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.limiter = limiter
        self._clock = clock
        self._sleep = sleep
        self._draw = draw

    def call(self, attempt: Callable[[float], T], what: str) -> T:
        policy = self.policy
        deadline: float | None = None
        reason = "no attempt"
        for n in range(policy.max_attempts):
            remaining = policy.deadline_seconds if deadline is None else deadline - self._clock()
            if remaining <= 0:
                break
            try:
                with self._slot(None if deadline is None else remaining):
                    if deadline is None:
                        deadline = self._clock() + policy.deadline_seconds
                        remaining = policy.deadline_seconds
                    return attempt(remaining)
            except LimiterTimeout:
                reason = "no free model slot"
                break
            except Retryable as exc:
                reason = exc.reason
                if n + 1 >= policy.max_attempts:
                    break
                # Never sooner than the server asked; the jitter on top keeps the callers it
                # turned away from all coming back in the same instant.
                delay = (exc.retry_after or 0.0) + policy.backoff(n, self._draw)
            assert deadline is not None
            if self._clock() + delay >= deadline:
                break
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


def retrier_for(settings: Any) -> Retrier:
    """The deployed policy: the configured deadline, and the process's shared limiter."""
    from .limiter import process_limiter

    return Retrier(RetryPolicy(deadline_seconds=settings.model_deadline_seconds), process_limiter(settings))
