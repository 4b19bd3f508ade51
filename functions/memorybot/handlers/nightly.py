"""The nightly run's steps, one thin handler per state of the state machine (one Lambda each):
claim -> plan -> speaker (the Distributed Map's child; speaker_failed is its Catch) -> review
-> finish. The use cases are ``nightly_steps`` and take typed payloads (``nightly_jobs``); each
handler parses its payload first, so a payload that does not parse is refused (``BadJob``,
logged by field names) before anything is read or written, and the execution fails loudly
instead of running on it.

EventBridge starts at least once: the claim makes a second start for the same day a no-op.
Logs carry ids and counts, never text.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core.night import nightly_steps
from ..core.night.consolidation import Consolidator
from ..core.night.nightly_jobs import ClaimedRun, NightlyStart, RunPlan, SpeakerFailure, SpeakerTask
from ..core.night.window import window_for
from ..core.record.changes import NightlyRun
from ..core.record.domain import NIGHTLY_EXECUTION_TIMEOUT
from ..core.record.jobs import BadJob, Payload
from ..core.record.metrics import NO_METRICS
from ..core.record.ports import Metrics
from . import log_core_with, measured

logger = Logger(service="memorybot-nightly")
log_core_with(logger)

P = TypeVar("P", bound=Payload)


def _step(name: str, payload: type[P], use_case: Callable[[Consolidator, P], Payload]) -> Callable[[Any, Any], dict]:
    """One state's Lambda entry: its payload parsed once (a bad one refused with one ERROR line and
    raised, so that the execution fails loudly), the typed use case, its answer serialised."""

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: Any, context: Any) -> dict:
        if isinstance(event, dict):
            logger.append_keys(step=name, run_id=event.get("run_id"))
        try:
            parsed = payload.from_json(event)
        except BadJob as exc:
            logger.error("nightly payload refused", extra={"reason": str(exc)})
            raise
        container = bootstrap.container()
        with measured(container):
            answer = use_case(container.consolidator, parsed).to_json()
        logger.info(
            "nightly step done", extra={k: v for k, v in answer.items() if k in ("run_id", "status", "speakers")}
        )
        return answer

    handler.__name__ = name
    return handler


# Each use case is looked up when called (not bound here), so that it is the module's current one.
# The claim is held for the execution's whole timeout: a second start for the day finds it claimed.
claim = _step("claim", NightlyStart, lambda c, p: nightly_steps.claim(c, p, NIGHTLY_EXECUTION_TIMEOUT))
plan = _step("plan", ClaimedRun, lambda c, p: nightly_steps.plan(c, p))
speaker = _step("speaker", SpeakerTask, lambda c, p: nightly_steps.speaker(c, p))
speaker_failed = _step("speaker_failed", SpeakerFailure, lambda c, p: nightly_steps.speaker_failed(c, p))
review = _step("review", RunPlan, lambda c, p: nightly_steps.review(c, p))
# The finish step counts the night (its metrics: docs/operations.md).
finish = _step("finish", RunPlan, lambda c, p: nightly_steps.finish(c, p, bootstrap.container().metrics))


scheduled_time = nightly_steps.scheduled_time  # how the claim reads a start's time


def day_label(now: datetime) -> str:
    """The day (in the deployment's time zone) a run as of ``now`` covers."""
    return window_for(now, bootstrap.container().zone).day_label


def run_in_process(consolidator: Consolidator, now: datetime, metrics: Metrics = NO_METRICS) -> NightlyRun | None:
    """The whole night in this process (the local stack): the same typed use cases as the states
    above, in the state machine's order, counted on ``metrics``; None when that day has already run."""
    return nightly_steps.run_in_process(consolidator, now, metrics)
