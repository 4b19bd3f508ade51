"""Hypothesis profiles. ``make test`` loads "standard": every property test runs the example
count written on it. ``make test-thorough`` (HYPOTHESIS_PROFILE=thorough) runs ten times as many,
for the searches too slow to run that long on every change.

Counts are written as ``examples(n)`` because an explicit ``max_examples`` on a test would
otherwise override whichever profile is loaded."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

STANDARD = 100  # the profile's max_examples is the scale: 100 is "as written"
# No example's outcome depends on how busy the machine is: no per-example deadline, and no
# "generation too slow" health check (both measure wall time; two workers on two shared cores
# can take several times longer than an idle machine).
UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("standard", max_examples=STANDARD, **UNTIMED)
settings.register_profile("thorough", max_examples=10 * STANDARD, **UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "standard")


def examples(n: int) -> int:
    """``n`` examples under the standard profile, scaled with the loaded one."""
    return max(1, n * settings.default.max_examples // STANDARD)
