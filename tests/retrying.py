"""A quick retry policy for tests: the real retry loop, with a deadline short enough that a
test of a failing server finishes in a fraction of a second."""

from memorybot.adapters.retry import Retrier, RetryPolicy

QUICK = RetryPolicy(deadline_seconds=0.3, base_delay=0.01, max_delay=0.05, max_attempts=4)


def quick_retrier(**kwargs) -> Retrier:
    return Retrier(QUICK, **kwargs)
