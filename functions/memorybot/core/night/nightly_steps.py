"""The nightly run's steps as payload in, payload out: what each state of the state machine
(one thin Lambda each, ``handlers/nightly.py``) and the in-process run both call.

Each step takes its typed payload (``nightly_jobs``) and answers the next step's; the handlers
parse and serialise at the edge (``from_json``: a payload that does not parse is refused with
``BadJob`` before anything is read or written), so the in-process run passes the types through.
``run_in_process`` is the state machine's order, for the local stack and the tests:
claim -> plan -> every speaker of the manifest (bounded concurrency; a speaker still
failing after its attempts is recorded failed) -> review -> finish.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from ..prompting import decisions
from ..record.changes import NightlyRun
from ..record.domain import NIGHTLY_MAX_DURATION, Owner, iso, parse_iso
from ..record.jobs import BadJob
from ..record.metrics import NO_METRICS, record_night
from ..record.ports import Metrics, ModelUnavailable
from .consolidation import Consolidator
from .nightly_jobs import (
    ALREADY_CLAIMED,
    CLAIMED,
    ClaimedRun,
    NightlyStart,
    RunFinished,
    RunPlan,
    SpeakerDone,
    SpeakerFailure,
    SpeakerTask,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

# What each state's Retry does with an error, by its name: a payload that does not parse is never
# retried; a model that stays throttled after its own in-call retries backs off; anything else is
# retried a few times more quickly.
REFUSED_ERRORS: tuple[type[Exception], ...] = (BadJob,)
THROTTLED_ERRORS: tuple[type[Exception], ...] = (ModelUnavailable,)


class ErrorKind(Enum):
    """How a state's Retry treats an error; each kind counts its retries on its own, as Step Functions' retriers do."""

    REFUSED = "refused"
    THROTTLED = "throttled"
    OTHER = "other"

    @classmethod
    def of(cls, error: Exception) -> ErrorKind:
        if isinstance(error, REFUSED_ERRORS):
            return cls.REFUSED
        return cls.THROTTLED if isinstance(error, THROTTLED_ERRORS) else cls.OTHER


@dataclass(frozen=True)
class StepRetry:
    """One state's Retry, defined once: ``infra/nightly.py`` renders it into the state machine and
    ``with_retries`` follows it in process. Counts are retries after the first attempt; a throttle
    waits ``throttle_interval * backoff_rate**n`` capped at ``throttle_max_delay``, with full jitter."""

    throttled: int
    other: int
    throttle_interval: int = 30
    throttle_max_delay: int = 300
    other_interval: int = 5
    backoff_rate: float = 2.0

    def wait(self, kind: ErrorKind, spent: int, draw: Callable[[], float]) -> float | None:
        """The wait before the next attempt after an error of ``kind`` (``spent``: the retries
        this kind has had already; each kind counts its own), or None when the Retry gives up."""
        if kind is ErrorKind.THROTTLED and spent < self.throttled:
            return draw() * min(self.throttle_interval * self.backoff_rate**spent, self.throttle_max_delay)
        if kind is ErrorKind.OTHER and spent < self.other:
            return self.other_interval * self.backoff_rate**spent
        return None


CLAIM_RETRY = StepRetry(throttled=3, other=2)
PLAN_RETRY = StepRetry(throttled=3, other=2)
SPEAKER_RETRY = StepRetry(throttled=4, other=2)
SPEAKER_FAILED_RETRY = StepRetry(throttled=3, other=3)
REVIEW_RETRY = StepRetry(throttled=4, other=2)
FINISH_RETRY = StepRetry(throttled=3, other=3)


def no_wait(_seconds: float) -> None:
    """The in-process run retries at once: its waits are the state machine's, for a real quota."""


def with_retries(
    step: Callable[[], T],
    retry: StepRetry,
    *,
    sleep: Callable[[float], None] = no_wait,
    draw: Callable[[], float] = random.random,
    ids: dict[str, Any] | None = None,
) -> T:
    """``step`` under ``retry`` as the state machine runs it; the last error once it gives up."""
    spent: Counter[ErrorKind] = Counter()
    while True:
        try:
            return step()
        except Exception as exc:
            kind = ErrorKind.of(exc)
            wait = retry.wait(kind, spent[kind], draw)
            logger.warning(
                "nightly step failed",
                extra={**(ids or {}), "attempt": spent.total() + 1, "error": type(exc).__name__},
            )
            if wait is None:
                raise
            spent[kind] += 1
            sleep(wait)


# The times a night may be run as of: from the Unix epoch to a day short of the calendar's end
# (a night's window reaches a day back, its label a day on, in JST).
EARLIEST_NIGHT = datetime(1970, 1, 2, tzinfo=UTC)
LATEST_NIGHT = datetime(9999, 12, 30, tzinfo=UTC)


def scheduled_time(raw: str) -> datetime:
    """EventBridge's time (UTC, 'Z'); a time without a zone is UTC. Refused (ValueError) if it does
    not parse or lies outside EARLIEST_NIGHT .. LATEST_NIGHT."""
    at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    try:
        inside = EARLIEST_NIGHT <= at.astimezone(UTC) <= LATEST_NIGHT
    except OverflowError:  # near year 1 or 9999, an offset leaves the calendar
        inside = False
    if not inside:
        raise ValueError(f"{raw!r} is outside {EARLIEST_NIGHT.date()} .. {LATEST_NIGHT.date()}")
    return at


def claim(c: Consolidator, start: NightlyStart, hold: timedelta = NIGHTLY_MAX_DURATION) -> ClaimedRun:
    as_of = scheduled_time(start.time)
    run = c.claim(as_of, hold)
    if run is None:
        return ClaimedRun(ALREADY_CLAIMED, 0, "", iso(as_of))
    return ClaimedRun(CLAIMED, run.run_id, run.day_label, iso(as_of))


def plan(c: Consolidator, claimed: ClaimedRun) -> RunPlan:
    if claimed.status != CLAIMED:
        raise ValueError("plan: the run is not claimed")
    key, speakers = c.plan(claimed.run_id, parse_iso(claimed.as_of))
    return RunPlan(claimed.run_id, claimed.day_label, claimed.as_of, key, speakers)


def speaker(c: Consolidator, task: SpeakerTask) -> SpeakerDone:
    mark = c.speaker(task.run_id, Owner(task.scope, task.user_id), task.messages)
    return SpeakerDone(task.run_id, task.speaker_key, mark.status)


def speaker_failed(c: Consolidator, failure: SpeakerFailure) -> SpeakerDone:
    error = str(failure.error.get("Error", "unknown"))  # the error's name only: a Cause may quote anything
    mark = c.speaker_failed(failure.run_id, Owner(failure.scope, failure.user_id), error)
    return SpeakerDone(failure.run_id, failure.speaker_key, mark.status)


def review(c: Consolidator, planned: RunPlan) -> RunPlan:
    c.review(planned.run_id, parse_iso(planned.as_of))
    return planned


def finished_run(c: Consolidator, planned: RunPlan) -> NightlyRun:
    """The finish step's work; its answer is the run itself (no read after it that could fail)."""
    return c.finish(planned.run_id, planned.manifest)


def finish(c: Consolidator, planned: RunPlan, metrics: Metrics = NO_METRICS) -> RunFinished:
    run = finished_run(c, planned)
    record_night(metrics, run)
    return RunFinished(run.run_id, run.day_label, "done")


def map_items(c: Consolidator, planned: RunPlan) -> list[SpeakerTask]:
    """What the Distributed Map's ItemReader and ItemSelector make of the manifest: one
    ``SpeakerTask`` per entry, with the run id (refused, ``BadJob``, if an entry does not fit)."""
    return [SpeakerTask.from_json({"run_id": planned.run_id, **entry}) for entry in c.manifests.read(planned.manifest)]


def map_child(c: Consolidator, task: SpeakerTask, sleep: Callable[[float], None] = no_wait) -> SpeakerDone:
    """One child of the Distributed Map: the speaker step under its Retry, then its Catch."""
    try:
        return with_retries(lambda: speaker(c, task), SPEAKER_RETRY, sleep=sleep, ids={"run_id": task.run_id})
    except Exception as exc:  # noqa: BLE001 - the Catch on States.ALL
        failure = SpeakerFailure(
            task.run_id, task.scope, task.user_id, task.messages, {"Error": type(exc).__name__, "Cause": ""}
        )
        return speaker_failed(c, failure)


def run_in_process(c: Consolidator, now: datetime, metrics: Metrics = NO_METRICS) -> NightlyRun | None:
    claimed = claim(c, NightlyStart(iso(now)))
    if claimed.status != CLAIMED:
        return None
    try:
        planned = plan(c, claimed)
        decisions.concurrently(lambda task: map_child(c, task), map_items(c, planned), c.speaker_concurrency)
        finished = finished_run(c, review(c, planned))
        record_night(metrics, finished)
    except BaseException:
        # What was applied is committed with its ledger row and each finished step has its mark:
        # give the run up so that the next call takes it over and goes on (the redrive).
        logger.warning("nightly run interrupted", extra={"run_id": claimed.run_id})
        c.release(claimed.run_id)
        raise
    return finished
