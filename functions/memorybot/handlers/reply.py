"""The reply worker: recent channel log + the speaker's memories -> chat model -> Discord.

Invoked asynchronously by the interactions function; idempotent on the interaction id.
A throttled chat model is retried within the call's deadline, then by Lambda's async retries
(the job raises; the reply's max event age keeps them inside the token's 15 minutes); the
apology comes only when those are spent too.
"""

from __future__ import annotations

from dataclasses import replace

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core.domain import BOT_NAME, Message, Owner, snowflake_at, utcnow
from ..core.jobs import ExtractionJob, ReplyJob
from ..core.ports import ModelUnavailable
from . import idempotent, log_core_with, refused, retries_spent

logger = Logger(service="memorybot-reply")
log_core_with(logger)

CONVERSATION_MESSAGES = 20  # the recent channel log the reply prompt sees
DISCORD_MESSAGE_MAX_CHARS = 2000
APOLOGY = "Sorry, I couldn't think of an answer just now. Please try again in a moment."


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id") if isinstance(event, dict) else None)
    if refused(ReplyJob, event, logger):
        return {"status": "refused"}
    return idempotent("reply", _reply, context)(job=event)


def _reply(job: dict) -> dict:
    return answer(ReplyJob.from_json(job))


def answer(job: ReplyJob) -> dict:
    """The reply use case: the channel log as context, only the speaker's memories (in the
    conversation's scope), the chat model, Discord; then hand the exchange to extraction."""
    c = bootstrap.container()
    if c.settings.fetch_channel_history:
        _fetch_history(c, job.channel_id, job.scope, job.application_id)
    conversation = c.message_store.recent(job.channel_id, CONVERSATION_MESSAGES)
    owner = Owner(job.scope, job.user_id)
    try:
        text = c.reply_writer.reply(owner, job.user_name, conversation).strip()[:DISCORD_MESSAGE_MAX_CHARS]
    except ModelUnavailable:
        if not retries_spent("reply", job.interaction_id):
            logger.warning("reply model unavailable: left for Lambda's retry")
            raise
        logger.warning("reply model unavailable after every retry")
        text = ""
    except Exception as exc:  # noqa: BLE001 - the model failed: apologise, remember nothing
        logger.warning("reply model failed", extra={"error": type(exc).__name__})
        text = ""
    if not text:
        c.discord.edit_original(job.application_id, job.token, APOLOGY)
        return {"status": "apologised"}
    message_id = c.discord.edit_original(job.application_id, job.token, text)
    message_id = message_id or snowflake_at(utcnow())
    # The reply belongs to the person it answers: part of their exchange, no one else's.
    c.message_store.put(
        Message(
            job.channel_id,
            message_id,
            job.application_id,
            BOT_NAME,
            text,
            is_bot=True,
            scope=job.scope,
            conversation_of=job.user_id,
        )
    )
    c.invoker.invoke(ExtractionJob.after_reply(job, message_id))
    return {"status": "replied", "message_id": message_id}


def _fetch_history(c, channel_id: str, scope: str, application_id: str) -> None:
    """Other people's ordinary messages join the log (needs the Message Content intent): context
    for replies and the diary, never part of anyone's conversation with the bot. Only this
    bot's own lines count as the bot's: another bot's words are someone else's."""
    try:
        for message in c.discord.recent_channel_messages(channel_id, CONVERSATION_MESSAGES):
            mine = message.is_bot and message.author_id == application_id
            # same id twice changes nothing
            c.message_store.put(replace(message, is_bot=mine, scope=scope, conversation_of=""))
    except Exception as exc:  # noqa: BLE001 - history is a bonus, never a reason not to answer
        logger.warning("channel history fetch failed", extra={"error": type(exc).__name__})
