"""The nightly function: EventBridge's 03:00 JST schedule in, one consolidation run out.

EventBridge delivers at least once: the run claims its JST day first, so a second
delivery for the same day does nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..consolidation import window_for
from ..domain import utcnow
from . import log_core_with

logger = Logger(service="memorybot-nightly")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    now = _scheduled_time(event)
    run = bootstrap.container().consolidator.run(now)
    if run is None:
        day = window_for(now).day_label
        logger.info("nightly day already done", extra={"day_label": day})
        return {"status": "already_claimed", "dayLabel": day}
    # Ids and counts only: the diary stays in the table.
    summary = {k: len(v) if isinstance(v, list) else v for k, v in run.summary.items()}
    logger.info("nightly run stored", extra={"run_id": run.run_id, "day_label": run.day_label, **summary})
    return {"status": "done", "runId": run.run_id, "dayLabel": run.day_label, "counts": summary}


def _scheduled_time(event: dict) -> datetime:
    """The schedule's own time (a late redelivery still names the same day); now if absent.

    A time that does not parse is refused rather than replaced by now, which would claim
    the wrong day. A time without a zone is UTC, as EventBridge's are.
    """
    raw = event.get("time")
    if raw is None:
        return utcnow()
    at = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)
