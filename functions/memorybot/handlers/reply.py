"""The reply worker: a ``ReplyJob`` in, ``conversation.answer`` out.

Invoked asynchronously by the interactions function; idempotent on the interaction id.
A throttled chat model is retried within the call's deadline, then by Lambda's async retries
(the job raises; the reply's max event age keeps them inside the token's 15 minutes); the
apology comes only when those are spent too.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from ..bootstrap import Container
from ..core.record.jobs import ReplyJob
from ..core.turn import conversation
from . import job_worker, log_core_with, retries_spent

logger = Logger(service="memorybot-reply")
log_core_with(logger)


def reply(c: Container, job: ReplyJob) -> dict:
    return conversation.answer(
        c,
        job,
        fetch_history=c.settings.fetch_channel_history,
        give_up=lambda: retries_spent(c, "reply", job.interaction_id),
    )


handler = job_worker(ReplyJob, logger, reply)
