"""The reply worker: a ``ReplyJob`` in, ``conversation.answer`` out.

Invoked asynchronously by the interactions function; idempotent on the interaction id.
A throttled chat model is retried within the call's deadline, then by Lambda's async retries
(the job raises; the reply's max event age keeps them inside the token's 15 minutes); the
apology comes only when those are spent too.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core import conversation
from ..core.jobs import ReplyJob
from . import idempotent, log_core_with, refused, retries_spent

logger = Logger(service="memorybot-reply")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id") if isinstance(event, dict) else None)
    if refused(ReplyJob, event, logger):
        return {"status": "refused"}
    return idempotent("reply", _reply, context)(job=event)


def _reply(job: dict) -> dict:
    reply_job = ReplyJob.from_json(job)
    c = bootstrap.container()
    return conversation.answer(
        c,
        reply_job,
        fetch_history=c.settings.fetch_channel_history,
        give_up=lambda: retries_spent("reply", reply_job.interaction_id),
    )
