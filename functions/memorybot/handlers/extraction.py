"""The extraction worker: after the reply, decide what (if anything) to remember.

Invoked asynchronously by the reply worker; idempotent on the interaction id.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..domain import EXCHANGE_MESSAGES, Actor
from . import idempotent, log_core_with

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
    result = c.extractor.run(job["user_id"], messages, actor=Actor.EXTRACTION)
    logger.info("extraction done", extra={"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted})
    return {"outcome": result.outcome, "added": result.added, "updated": result.updated, "deleted": result.deleted}
