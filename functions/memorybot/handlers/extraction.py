"""The extraction worker: an ``ExtractionJob`` in, ``conversation.extract`` out.

Invoked asynchronously by the reply worker; idempotent on the interaction id. It also runs
"Remember this" (a ``RememberJob`` from the interactions function): the same decisions on the
one message pointed at, then the person's deferred answer filled in. A model that
stays throttled or unreachable is "not yet": the job raises before applying anything and
Lambda runs it again; once Lambda's retries are spent nothing is written and it is counted
(the ``DecisionsLost`` metric, alarmed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from ..bootstrap import Container
from ..core import conversation, metrics
from ..core.jobs import ExtractionJob, RememberJob
from . import count_metric, job_worker, log_core_with, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)


def extract(c: Container, job: ExtractionJob) -> dict:
    return _done(c, "extraction done", conversation.extract(c, job, give_up=_give_up(c, job)))


def remember(c: Container, job: RememberJob) -> dict:
    return _done(c, "remember done", conversation.remember(c, job, give_up=_give_up(c, job)))


def _give_up(c: Container, job: ExtractionJob | RememberJob) -> Callable[[], bool]:
    return lambda: retries_spent(c, "extraction", job.interaction_id)


def _done(c: Container, what: str, result: conversation.Extracted) -> dict:
    if result.outcome == conversation.DECISIONS_LOST:
        count_metric(c, metrics.DECISIONS_LOST)
    metrics.record_turn(c.metrics, result.outcome)
    metrics.record_changes(c.metrics, added=len(result.added), updated=len(result.updated), deleted=len(result.deleted))
    answer = result.to_json()  # memory ids only
    logger.info(what, extra=answer)
    return answer


_extract = job_worker(ExtractionJob, logger, extract)
_remember = job_worker(RememberJob, logger, remember)


def handler(event: Any, context: Any) -> dict:
    """Two jobs, one function (the same grants): "Remember this" is told apart by its target."""
    if isinstance(event, dict) and "target_message_id" in event:
        return _remember(event, context)
    return _extract(event, context)
