"""The extraction worker: an ``ExtractionJob`` in, ``conversation.extract`` out.

Invoked asynchronously by the reply worker; idempotent on the interaction id. It also runs a
confirmed ``/memory forget-all`` (a ``ForgetAllJob``: the deletes, then the confirmation updated), and
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
from ..core.record import metrics
from ..core.record.domain import utcnow
from ..core.record.jobs import ExtractionJob, ForgetAllJob, RememberJob
from ..core.rights import commands, everywhere, receipts
from ..core.rights.servers import guild_of
from ..core.turn import conversation
from ..discord.receipts_view import receipt_message, tell_the_night
from . import count_metric, job_worker, log_core_with, retries_spent

logger = Logger(service="memorybot-extraction")
log_core_with(logger)


def extract(c: Container, job: ExtractionJob) -> dict:
    result = conversation.extract(c, job, give_up=_give_up(c, job))
    _receipt(c, job, result, as_answer=False)  # a follow-up: the reply is the interaction's answer
    return _done(c, "extraction done", result)


def remember(c: Container, job: RememberJob) -> dict:
    result = conversation.remember(
        c, job, give_up=_give_up(c, job), receipt=lambda changed: _receipt(c, job, changed, as_answer=True)
    )
    # A use of the bot in that scope: the night's changes are told here too (after the answer).
    tell_the_night(c.memory_store, c.discord_webhooks, job)
    return _done(c, "remember done", result)


def _receipt(
    c: Container, job: ExtractionJob | RememberJob, result: conversation.Extracted, *, as_answer: bool
) -> bool:
    """What the turn changed, told to the person on its own interaction (one Discord request)."""
    return receipts.deliver(
        c.people_store,
        c.discord_webhooks,
        receipt_message,
        receipts.Interaction(job.interaction_id, job.application_id, job.token),
        receipts.receipt_of(job.user_id, job.locale, result.changes),
        as_answer=as_answer,
    )


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


def forget_all(c: Container, job: ForgetAllJob) -> dict:
    answer = commands.forget_all_job(
        c,
        job,
        then=lambda: everywhere.forget_all_tail(
            c.memory_store, c.people_store, job.user_id, job.locale, job.everywhere
        ),
    )
    if answer["forgotten"]:
        c.metrics.add(metrics.MEMORIES_FORGOTTEN, answer["forgotten"])
        _forgotten_here(c, job, answer["forgotten"])
    return answer


def _forgotten_here(c: Container, job: ForgetAllJob, count: int) -> None:
    """The server's figures after a forget-all there: its memories less, the person no longer among its people."""
    guild = guild_of(job.scope)
    if not guild:
        return
    try:
        c.server_store.count(guild, utcnow().astimezone(c.zone).date(), memories=-count)
        c.server_store.count_person(guild, job.user_id, has_memories=False)
    except Exception as exc:  # noqa: BLE001 - the forget-all stands; the figures are a courtesy
        logger.warning("server figures not updated", extra={"error": type(exc).__name__})


_extract = job_worker(ExtractionJob, logger, extract)
_remember = job_worker(RememberJob, logger, remember)
_forget_all = job_worker(ForgetAllJob, logger, forget_all)


def handler(event: Any, context: Any) -> dict:
    """Three jobs, one function (the same grants): "Remember this" is told apart by its target, a
    confirmed forget-all (its deletes with their rows, as extraction's) by its stamp."""
    if isinstance(event, dict) and "target_message_id" in event:
        return _remember(event, context)
    if isinstance(event, dict) and "forget_all_started" in event:
        return _forget_all(event, context)
    return _extract(event, context)
