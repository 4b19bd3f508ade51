"""The extraction worker: after the reply, decide what (if anything) to remember.

Invoked asynchronously by the reply worker; idempotent on the interaction id. A model that
stays throttled or unreachable is "not yet": the job raises before applying anything and
Lambda runs it again; once Lambda's retries are spent nothing is written and it is counted
(the ``DecisionsLost`` metric, alarmed).
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..domain import EXCHANGE_MESSAGES, Actor
from ..ports import ModelUnavailable
from . import count_metric, idempotent, log_core_with, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)



@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id"))
    return idempotent("extraction", _extract, context)(job=event)


def _extract(job: dict) -> dict:
    c = bootstrap.container()
    # The exchange ends at the bot's reply: later messages belong to later turns.
    messages = c.message_store.recent(job["channel_id"], EXCHANGE_MESSAGES, up_to=job.get("up_to_message_id"))
    try:
        result = c.extractor.run(job["user_id"], messages, actor=Actor.EXTRACTION)
    except ModelUnavailable:
        if not retries_spent("extraction", job):
            logger.warning("model unavailable: extraction left for Lambda's retry")
            raise
        logger.warning("model unavailable after every retry: decisions lost")
        count_metric("DecisionsLost")
        return {"outcome": "decisions_lost", "added": [], "updated": [], "deleted": []}
    logger.info("extraction done", extra={"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted})
    return {"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted}
