"""The nightly run's steps as payload in, payload out: what each state of the state machine
(one thin Lambda each, ``handlers/nightly.py``) and the in-process run both call.

Each step parses its payload first (``from_json``: a payload that does not parse is refused
with ``BadJob`` before anything is read or written) and answers the next step's payload.
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

from . import decisions
from .consolidation import Consolidator
from .domain import NIGHTLY_MAX_DURATION, NightlyRun, Owner, iso, parse_iso
from .jobs import BadJob
from .nightly_jobs import (
    ALREADY_CLAIMED,
    CLAIMED,
    ClaimedRun,
    NightlyStart,
    RunFinished,
    RunPlan,
    SpeakerFailure,
    SpeakerTask,
)
from .ports import ModelUnavailable

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


def scheduled_time(raw: str) -> datetime:
    """EventBridge's time (UTC, 'Z'); a time without a zone is UTC. Refused (ValueError) if it does not parse."""
    at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def claim(c: Consolidator, event: Any, hold: timedelta = NIGHTLY_MAX_DURATION) -> dict:
    start = NightlyStart.from_json(event)
    as_of = scheduled_time(start.time)
    run = c.claim(as_of, hold)
    if run is None:
        return ClaimedRun(ALREADY_CLAIMED, 0, "", iso(as_of)).to_json()
    return ClaimedRun(CLAIMED, run.run_id, run.day_label, iso(as_of)).to_json()


def plan(c: Consolidator, event: Any) -> dict:
    claimed = ClaimedRun.from_json(event)
    if claimed.status != CLAIMED:
        raise ValueError("plan: the run is not claimed")
    key, speakers = c.plan(claimed.run_id, parse_iso(claimed.as_of))
    return RunPlan(claimed.run_id, claimed.day_label, claimed.as_of, key, speakers).to_json()


def speaker(c: Consolidator, event: Any) -> dict:
    task = SpeakerTask.from_json(event)
    mark = c.speaker(task.run_id, Owner(task.scope, task.user_id), task.messages)
    return {"run_id": task.run_id, "speaker": task.speaker_key, "status": mark["status"]}


def speaker_failed(c: Consolidator, event: Any) -> dict:
    failure = SpeakerFailure.from_json(event)
    error = str(failure.error.get("Error", "unknown"))  # the error's name only: a Cause may quote anything
    mark = c.speaker_failed(failure.run_id, Owner(failure.scope, failure.user_id), error)
    return {"run_id": failure.run_id, "speaker": failure.speaker_key, "status": mark["status"]}


def review(c: Consolidator, event: Any) -> dict:
    planned = RunPlan.from_json(event)
    c.review(planned.run_id, parse_iso(planned.as_of))
    return planned.to_json()


def finish(c: Consolidator, event: Any) -> dict:
    planned = RunPlan.from_json(event)
    run = c.finish(planned.run_id, planned.manifest)
    return RunFinished(run.run_id, run.day_label, "done").to_json()


def map_items(c: Consolidator, planned: RunPlan) -> list[dict]:
    """What the Distributed Map's ItemReader and ItemSelector make of the manifest: one
    ``SpeakerTask`` payload per entry, with the run id."""
    return [{"run_id": planned.run_id, **entry} for entry in c.manifests.read(planned.manifest)]


def map_child(c: Consolidator, item: dict, sleep: Callable[[float], None] = no_wait) -> dict:
    """One child of the Distributed Map: the speaker step under its Retry, then its Catch."""
    try:
        return with_retries(lambda: speaker(c, item), SPEAKER_RETRY, sleep=sleep, ids={"run_id": item.get("run_id")})
    except Exception as exc:  # noqa: BLE001 - the Catch on States.ALL
        return speaker_failed(c, {**item, "error": {"Error": type(exc).__name__, "Cause": ""}})


def run_in_process(c: Consolidator, now: datetime) -> NightlyRun | None:
    claimed = ClaimedRun.from_json(claim(c, NightlyStart(iso(now)).to_json()))
    if claimed.status != CLAIMED:
        return None
    try:
        planned = RunPlan.from_json(plan(c, claimed.to_json()))
        decisions.concurrently(lambda item: map_child(c, item), map_items(c, planned), c.speaker_concurrency)
        reviewed = RunPlan.from_json(review(c, planned.to_json()))
        # The finish step's own use case: its answer is the run itself (no read after it that could fail).
        finished = c.finish(reviewed.run_id, reviewed.manifest)
    except BaseException:
        # What was applied is committed with its ledger row and each finished step has its mark:
        # give the run up so that the next call takes it over and goes on (the redrive).
        logger.warning("nightly run interrupted", extra={"run_id": claimed.run_id})
        c.release(claimed.run_id)
        raise
    return finished
