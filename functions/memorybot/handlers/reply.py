"""The reply worker: a ``ReplyJob`` in, ``conversation.answer`` out.

Invoked asynchronously by the interactions function; idempotent on the interaction id.
A throttled chat model is retried within the call's deadline, then by Lambda's async retries
(the job raises; the reply's max event age keeps them inside the token's 15 minutes); the
apology comes only when those are spent too.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from ..bootstrap import Container
from ..core.record import metrics
from ..core.record.jobs import ReplyJob
from ..core.turn import conversation
from ..discord.history_view import button_rows
from ..discord.receipts_view import because_button, tell_the_night
from . import job_worker, log_core_with, retries_spent

logger = Logger(service="memorybot-reply")
log_core_with(logger)


def reply(c: Container, job: ReplyJob) -> dict:
    answer = conversation.answer(
        c,
        job,
        fetch_history=c.settings.fetch_channel_history,
        give_up=lambda: retries_spent(c, "reply", job.interaction_id),
        # "Why?": names the asker and this interaction, never any text (only they may use it)
        reply_buttons=button_rows([because_button(job.user_id, job.interaction_id, job.locale)]),
    )
    c.metrics.add(metrics.TURNS)  # answered (a reply or the apology): once, the job runs once
    if answer.get("learning") == "paused":  # nothing handed on: the turn's outcome is known here
        metrics.record_turn(c.metrics, "paused")
    if answer.get("status") == "replied":  # the night's changes, told once on the next use here
        tell_the_night(c.memory_store, c.discord, job)
    return answer


handler = job_worker(ReplyJob, logger, reply)
