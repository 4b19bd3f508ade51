"""Hearing a ``/chat`` line: the person's line joins their conversation and the reply is handed
on. The interactions function's one step of a conversation (inside Discord's 3 seconds); the
workers' steps are in conversation.py, which the function's cold start does not import.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from ..record.conflicts import PersonRefused
from ..record.person import Basis, PersonCheck
from ..record.terms import Message, snowflake_time

if TYPE_CHECKING:
    from ..record.jobs import ReplyJob
    from ..record.ports import AsyncInvoker, MessageStore

logger = logging.getLogger(__name__)


class HearDeps(Protocol):
    @property
    def message_store(self) -> MessageStore: ...

    @property
    def invoker(self) -> AsyncInvoker: ...


def stored_for(job: ReplyJob) -> PersonCheck:
    """What a line of the job's conversation is stored under: no erasure of the person since the
    job began (the interaction id is a snowflake: its time is when the person spoke)."""
    return PersonCheck(job.user_id, snowflake_time(job.interaction_id), Basis.STORE)


def hear(deps: HearDeps, job: ReplyJob, text: str) -> bool:
    """Store the person's line and hand the reply on; False when the hand-off failed (the
    person is told so; the line stays, as part of their conversation). A line already stored
    (the same interaction replayed) is not handed on again: True, quietly."""
    # The interaction id is a snowflake: the message's time is the time in it.
    # Part of the caller's own conversation with the bot: it may decide their memories.
    try:
        heard = deps.message_store.put(
            Message(
                job.channel_id,
                job.interaction_id,
                job.user_id,
                job.user_name,
                text,
                is_bot=False,
                scope=job.scope,
                conversation_of=job.user_id,
            ),
            check=stored_for(job),
        )
    except PersonRefused:  # erased in the instant since they spoke: nothing kept, no reply
        logger.info("chat not stored: the person was erased", extra={"interaction_id": job.interaction_id})
        return False
    if not heard:
        # The same interaction again (a replay inside the signature's window): its reply is the
        # first copy's. A second hand-off would only find that reply in progress and fail.
        logger.info("chat already heard: not handed on again", extra={"interaction_id": job.interaction_id})
        return True
    try:
        deps.invoker.invoke(job)
    except Exception as exc:  # noqa: BLE001 - the person gets an answer either way
        logger.error("reply hand-off failed", extra={"interaction_id": job.interaction_id, "error": type(exc).__name__})
        return False
    return True
