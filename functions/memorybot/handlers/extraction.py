"""The extraction worker: after the reply, decide what (if anything) to remember.

Invoked asynchronously by the reply worker; idempotent on the interaction id. A model that
stays throttled or unreachable is "not yet": the job raises before applying anything and
Lambda runs it again; once Lambda's retries are spent nothing is written and it is counted
(the ``DecisionsLost`` metric, alarmed).
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core.domain import EXCHANGE_MESSAGES, Actor, Speaker
from ..core.jobs import ExtractionJob
from ..core.ports import ModelUnavailable
from . import count_metric, idempotent, log_core_with, refused, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)


class ExchangeNotReadable(Exception):
    """The bot's reply is not yet visible in the conversation index (a GSI is eventually
    consistent): fail, and Lambda's async retry reads it again a little later."""


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id") if isinstance(event, dict) else None)
    if refused(ExtractionJob, event, logger):
        return {"status": "refused"}
    return idempotent("extraction", _extract, context)(job=event)


def _extract(job: dict) -> dict:
    return extract(ExtractionJob.from_json(job))


def extract(job: ExtractionJob) -> dict:
    """The extraction use case: the person's own exchange (their lines and the bot's replies
    to them, up to this reply), their profile in this scope, Jev's decisions."""
    c = bootstrap.container()
    messages = c.message_store.conversation(job.channel_id, job.user_id, EXCHANGE_MESSAGES, up_to=job.up_to_message_id)
    if not messages or messages[-1].message_id != job.up_to_message_id:
        raise ExchangeNotReadable(job.up_to_message_id)
    try:
        result = c.extractor.run(Speaker(job.user_id, job.user_name), job.scope, messages, actor=Actor.EXTRACTION)
    except ModelUnavailable:
        if not retries_spent("extraction", job.interaction_id):
            logger.warning("model unavailable: extraction left for Lambda's retry")
            raise
        logger.warning("model unavailable after every retry: decisions lost")
        count_metric("DecisionsLost")
        return {"outcome": "decisions_lost", "added": [], "updated": [], "deleted": []}
    logger.info(
        "extraction done",
        extra={"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted},
    )
    return {"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted}
