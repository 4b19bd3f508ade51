"""The reply worker: recent channel log + the speaker's memories -> chat model -> Discord.

Invoked asynchronously by the interactions function; idempotent on the interaction id.
A throttled chat model is retried within the call's deadline, then by Lambda's async retries
(the job raises; the reply's max event age keeps them inside the token's 15 minutes); the
apology comes only when those are spent too.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..domain import Message, snowflake_at, utcnow
from ..ports import ModelUnavailable
from . import idempotent, log_core_with, retries_spent

logger = Logger(service="memorybot-reply")
log_core_with(logger)

CONVERSATION_MESSAGES = 20  # the recent channel log the reply prompt sees
DISCORD_MESSAGE_MAX_CHARS = 2000
BOT_NAME = "memorybot"
APOLOGY = "Sorry, I couldn't think of an answer just now. Please try again in a moment."


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    logger.append_keys(interaction_id=event.get("interaction_id"))
    return idempotent("reply", _reply, context)(job=event)


def _reply(job: dict) -> dict:
    c = bootstrap.container()
    channel_id, user_id = job["channel_id"], job["user_id"]
    if c.settings.fetch_channel_history:
        _fetch_history(c, channel_id)
    conversation = c.message_store.recent(channel_id, CONVERSATION_MESSAGES)
    try:
        text = c.reply_writer.reply(user_id, job["user_name"], conversation).strip()[:DISCORD_MESSAGE_MAX_CHARS]
    except ModelUnavailable:
        if not retries_spent("reply", job):
            logger.warning("reply model unavailable: left for Lambda's retry")
            raise
        logger.warning("reply model unavailable after every retry")
        text = ""
    except Exception as exc:  # noqa: BLE001 - the model failed: apologise, remember nothing
        logger.warning("reply model failed", extra={"error": type(exc).__name__})
        text = ""
    if not text:
        c.discord.edit_original(job["application_id"], job["token"], APOLOGY)
        return {"status": "apologised"}
    message_id = c.discord.edit_original(job["application_id"], job["token"], text)
    message_id = message_id or snowflake_at(utcnow())
    c.message_store.put(Message(channel_id, message_id, job["application_id"], BOT_NAME, text, is_bot=True))
    c.invoker.invoke("extraction", {**_ids(job), "up_to_message_id": message_id})
    return {"status": "replied", "message_id": message_id}


def _fetch_history(c, channel_id: str) -> None:
    """Other people's ordinary messages join the log (needs the Message Content intent)."""
    try:
        for message in c.discord.recent_channel_messages(channel_id, CONVERSATION_MESSAGES):
            c.message_store.put(message)  # same id twice changes nothing
    except Exception as exc:  # noqa: BLE001 - history is a bonus, never a reason not to answer
        logger.warning("channel history fetch failed", extra={"error": type(exc).__name__})


def _ids(job: dict) -> dict:
    return {k: job[k] for k in ("interaction_id", "channel_id", "user_id")}
