"""The extraction worker: an ``ExtractionJob`` in, ``conversation.extract`` out.

Invoked asynchronously by the reply worker; idempotent on the interaction id. A model that
stays throttled or unreachable is "not yet": the job raises before applying anything and
Lambda runs it again; once Lambda's retries are spent nothing is written and it is counted
(the ``DecisionsLost`` metric, alarmed).
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from ..bootstrap import Container
from ..core import conversation
from ..core.jobs import ExtractionJob
from . import count_metric, job_worker, log_core_with, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)


def extract(c: Container, job: ExtractionJob) -> dict:
    result = conversation.extract(c, job, give_up=lambda: retries_spent(c, "extraction", job.interaction_id))
    if result.outcome == conversation.DECISIONS_LOST:
        count_metric(c, "DecisionsLost")
    answer = result.to_json()  # memory ids only
    logger.info("extraction done", extra=answer)
    return answer


handler = job_worker(ExtractionJob, logger, extract)
