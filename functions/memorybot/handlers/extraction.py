"""The extraction worker: an ``ExtractionJob`` in, ``conversation.extract`` out.

Invoked asynchronously by the reply worker; idempotent on the interaction id. A model that
stays throttled or unreachable is "not yet": the job raises before applying anything and
Lambda runs it again; once Lambda's retries are spent nothing is written and it is counted
(the ``DecisionsLost`` metric, alarmed).
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core import conversation
from ..core.jobs import ExtractionJob
from . import count_metric, idempotent, log_core_with, refused, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id") if isinstance(event, dict) else None)
    if refused(ExtractionJob, event, logger):
        return {"status": "refused"}
    return idempotent("extraction", _extract, context)(job=event)


def _extract(job: dict) -> dict:
    extraction_job = ExtractionJob.from_json(job)
    result = conversation.extract(
        bootstrap.container(),
        extraction_job,
        give_up=lambda: retries_spent("extraction", extraction_job.interaction_id),
    )
    if result.outcome == conversation.DECISIONS_LOST:
        count_metric("DecisionsLost")
    answer = result.to_json()  # memory ids only
    logger.info("extraction done", extra=answer)
    return answer
