"""A conversation with the bot, one use case per step, each over typed dependencies:

- ``hear`` (hearing.py): a person's ``/chat`` line joins their conversation and the reply is
  handed on (the interactions function, inside Discord's 3 seconds);
- ``answer``: the reply job, the channel's recent log as context and only the speaker's
  memories in the prompt, then the exchange handed to extraction (the reply worker);
- ``extract``: the person's own exchange up to that reply, Jev's decisions on their profile
  (the extraction worker);
- ``remember``: "Remember this" on the person's own message: that message alone, through the
  same decisions, and the person told what happened (the extraction worker).

A model that stays throttled or unreachable is "not yet": the use case raises
``ModelUnavailable`` so that the worker's retry runs it again, unless ``give_up()`` says the
retries are spent; only then does the design's rule apply (an apology, or no decision).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from ..record.catalog import text
from ..record.domain import (
    BOT_NAME,
    EXCHANGE_MESSAGES,
    Actor,
    Message,
    Owner,
    Speaker,
    is_snowflake,
    snowflake_at,
    utcnow,
)
from ..record.jobs import ExtractionJob, RememberJob, ReplyJob
from ..record.person import Basis, Person, PersonCheck
from ..record.ports import (
    DiscordApi,
    MessageStore,
    ModelUnavailable,
    PeopleStore,
    PersonRefused,
    RememberedMessages,
)
from .hearing import HearDeps, stored_for

if TYPE_CHECKING:  # in annotations only
    from ..record.changes import LedgerEntry
    from ..rights.servers import ServerSettings, ServerStore
    from .extraction import Extractor
    from .reply import ReplyWriter

logger = logging.getLogger(__name__)

CONVERSATION_MESSAGES = 20  # the recent channel log the reply prompt sees
REPLY_MAX_CHARS = 2000  # Discord's message limit


class ExchangeNotReadable(Exception):
    """The bot's reply is not yet visible in the conversation index (a GSI is eventually
    consistent): fail, and the worker's retry reads it again a little later."""


# ---- answer: the reply job


class ReplyDeps(HearDeps, Protocol):
    @property
    def reply_writer(self) -> ReplyWriter: ...

    @property
    def discord(self) -> DiscordApi: ...

    @property
    def people_store(self) -> PeopleStore: ...

    @property
    def server_store(self) -> ServerStore: ...


def _reply_read_id(interaction_id: str) -> str:
    from ..rights.why import (
        reply_read_id,  # the reply worker's: the interactions function's cold start needs none of why
    )

    return reply_read_id(interaction_id)


def server_of(deps: object, guild_id: str) -> ServerSettings | None:
    """The settings of the server a job was said in (None outside a server): read live, once per job."""
    if not guild_id:
        return None
    store: ServerStore = deps.server_store  # type: ignore[attr-defined]
    return store.get(guild_id)


def _count(deps: object, guild_id: str, **counts: int | str) -> None:
    if guild_id:
        from ..rights.servers import count_quietly

        day = utcnow().astimezone(deps.zone).date()  # type: ignore[attr-defined]  # the deployment's day
        count_quietly(deps.server_store, guild_id, day, **counts)  # type: ignore[attr-defined,arg-type]


def answer(
    deps: ReplyDeps,
    job: ReplyJob,
    *,
    fetch_history: bool,
    give_up: Callable[[], bool],
    reply_buttons: Sequence[dict] = (),
) -> dict:
    """The reply in the channel (with ``reply_buttons``: its "Why?"), then the exchange handed to
    extraction; the apology when the chat model failed (or stayed unavailable through every retry).
    The reply's read row is named after its interaction (core/rights/why.py)."""
    if fetch_history:
        _fetch_history(deps, job)
    conversation = deps.message_store.recent(job.channel_id, CONVERSATION_MESSAGES)
    person = Person(job.user_id)
    server = server_of(deps, job.guild_id)  # memory off here: no memory used, nothing learned
    server_learns = server is None or server.memory_enabled
    try:
        reply, person = deps.reply_writer.write(
            Owner(job.scope, job.user_id),
            job.user_name,
            conversation,
            read_id=_reply_read_id(job.interaction_id),
            use_memories=server_learns,
            persona=server.persona if server is not None else "",
        )
        _count(deps, job.guild_id, model_requests=1)
        reply = reply.strip()[:REPLY_MAX_CHARS]
    except ModelUnavailable:
        if not give_up():
            logger.warning("reply model unavailable: left for the worker's retry")
            raise
        logger.warning("reply model unavailable after every retry")
        reply = ""
    except Exception as exc:  # noqa: BLE001 - the model failed: apologise, remember nothing
        logger.warning("reply model failed", extra={"error": type(exc).__name__})
        reply = ""
    if not reply:
        deps.discord.edit_original(job.application_id, job.token, text("apology", job.locale))
        return {"status": "apologised"}
    message_id = deps.discord.edit_original(job.application_id, job.token, reply, reply_buttons) or snowflake_at(
        utcnow()
    )
    # The reply belongs to the person it answers: part of their exchange, no one else's.
    try:
        deps.message_store.put(
            Message(
                job.channel_id,
                message_id,
                job.application_id,
                BOT_NAME,
                reply,
                is_bot=True,
                scope=job.scope,
                conversation_of=job.user_id,
            ),
            check=stored_for(job),
        )
    except PersonRefused:  # erased while this turn was in flight: nothing more is kept or learned
        logger.info("reply not stored: the person was erased", extra=job.ids())
        return {"status": "replied", "message_id": message_id, "stored": False}
    if job.scope not in person.noticed:
        _give_notice(deps, job)
    if person.paused:  # nothing is learned from their turns (the extraction job checks again)
        return {"status": "replied", "message_id": message_id, "learning": "paused"}
    if not server_learns:  # the server's admins turned memory off (the extraction job checks again)
        return {"status": "replied", "message_id": message_id, "learning": "server_off"}
    deps.invoker.invoke(ExtractionJob.after_reply(job, message_id))
    return {"status": "replied", "message_id": message_id}


def _give_notice(deps: ReplyDeps, job: ReplyJob) -> None:
    """The first-use notice, once per person and scope: the claim is a conditional write, so two
    first turns at once send it once. Only they see it (an ephemeral follow-up)."""
    try:
        if not deps.people_store.claim_notice(job.user_id, job.scope, stored_for(job)):
            return
    except Exception as exc:  # noqa: BLE001 - the reply is posted; the next turn tries again
        logger.warning("notice not claimed", extra={**job.ids(), "error": type(exc).__name__})
        return
    try:
        from ..rights.consent import notice_text  # the reply worker's, on the first turn: not the interactions' import

        deps.discord.follow_up(job.application_id, job.token, notice_text(job.locale))
    except Exception as exc:  # noqa: BLE001 - give the claim back so that a later turn gives it
        logger.warning("notice not sent", extra={**job.ids(), "error": type(exc).__name__})
        try:
            deps.people_store.release_notice(job.user_id, job.scope)
        except Exception:  # noqa: BLE001
            logger.warning("notice claim not released", extra=job.ids())


def history_check(message: Message) -> PersonCheck:
    """What a line fetched from the channel's history is stored under: its author's record, as
    for every other writer (an erased person's earlier lines are not stored again)."""
    return PersonCheck(message.author_id, message.created_at, Basis.STORE)


def _fetch_history(deps: ReplyDeps, job: ReplyJob) -> None:
    """Other people's ordinary messages join the log (needs the Message Content intent): context
    for replies and the diary, never part of anyone's conversation with the bot. Another bot's
    words are someone else's. This bot's own lines are not taken from history: it stores each
    reply as it posts it, with the person it answers; a copy from history is either stored
    already or was deleted by that person's erasure."""
    try:
        for message in deps.discord.recent_channel_messages(job.channel_id, CONVERSATION_MESSAGES):
            if message.author_id == job.application_id or not is_snowflake(message.author_id):
                continue
            line = replace(message, is_bot=False, scope=job.scope, conversation_of="")
            try:
                deps.message_store.put(line, check=history_check(line))  # same id twice changes nothing
            except PersonRefused:  # its author was erased after saying it
                continue
    except Exception as exc:  # noqa: BLE001 - history is a bonus, never a reason not to answer
        logger.warning("channel history fetch failed", extra={"error": type(exc).__name__})


# ---- extract: the extraction job


class ExtractDeps(Protocol):
    @property
    def message_store(self) -> MessageStore: ...

    @property
    def extractor(self) -> Extractor: ...


@dataclass(frozen=True)
class Extracted:
    """What an extraction did: its outcome and the memory ids it touched."""

    outcome: str
    added: list[str]
    updated: list[str]
    deleted: list[str]
    changes: tuple[LedgerEntry, ...] = ()  # the rows of what changed (a receipt's lines); not in the JSON

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "added": self.added, "updated": self.updated, "deleted": self.deleted}


DECISIONS_LOST = "decisions_lost"
SERVER_OFF = "server_off"  # the server's admins turned memory off: nothing learned


def extract(deps: ExtractDeps, job: ExtractionJob, *, give_up: Callable[[], bool]) -> Extracted:
    """The person's own exchange (their lines and the bot's replies to them, up to this reply),
    their profile in this scope, Jev's decisions."""
    messages = deps.message_store.conversation(
        job.channel_id, job.user_id, EXCHANGE_MESSAGES, up_to=job.up_to_message_id
    )
    if not messages or messages[-1].message_id != job.up_to_message_id:
        raise ExchangeNotReadable(job.up_to_message_id)
    if job.guild_id:  # the server's memory: off now, or turned on since some of these lines were said
        from ..rights.servers import learnable_lines

        messages = learnable_lines(server_of(deps, job.guild_id), messages)
        if not messages or messages[-1].message_id != job.up_to_message_id:
            return Extracted(SERVER_OFF, [], [], [])
    try:
        result = deps.extractor.run(Speaker(job.user_id, job.user_name), job.scope, messages, actor=Actor.EXTRACTION)
    except ModelUnavailable:
        if not give_up():
            logger.warning("model unavailable: extraction left for the worker's retry")
            raise
        logger.warning("model unavailable after every retry: decisions lost")
        return Extracted(DECISIONS_LOST, [], [], [])
    _count_learned(deps, job, result.model_calls, result.added, result.deleted)
    return Extracted(result.outcome, result.added, result.updated, result.deleted, tuple(result.changes))


def _count_learned(
    deps: object, job: ExtractionJob | RememberJob, model_calls: int, added: list[str], deleted: list[str]
) -> None:
    """The server's figures: the model requests, and the memories learned or dropped (memories kept
    per server only: in the global scope mode they are no server's)."""
    per_server = job.scope == f"guild:{job.guild_id}"
    _count(
        deps,
        job.guild_id,
        model_requests=model_calls,
        memories=len(added) - len(deleted) if per_server else 0,
        person=job.user_id if added and per_server else "",
    )


# ---- remember: "Remember this" on the person's own message


class RememberDeps(Protocol):
    @property
    def extractor(self) -> Extractor: ...

    @property
    def remembered_messages(self) -> RememberedMessages: ...

    @property
    def discord_webhooks(self) -> DiscordApi: ...


# What the person is told, by the extraction's outcome ("done" that changed nothing: nothing new).
REMEMBER_ANSWERS = {
    "paused": "remember_paused",
    "no_exchange": "remember_nothing",  # said before a resume or an erasure, or its memory was forgotten
    "not_worth": "remember_nothing",
    "no_decision": "remember_not_now",
    DECISIONS_LOST: "remember_not_now",
}


def remember(
    deps: RememberDeps,
    job: RememberJob,
    *,
    give_up: Callable[[], bool],
    receipt: Callable[[Extracted], bool] | None = None,
) -> Extracted:
    """The exchange is the message the person pointed at, with its own time; the same path as a
    reply's extraction decides (worth, verdicts, add), actor ``command``, the message kept as the
    memory's source. Their deferred answer then says what happened, in their language."""
    message = Message(
        job.channel_id,
        job.target_message_id,
        job.user_id,
        job.user_name,
        job.content,
        is_bot=False,
        scope=job.scope,
        conversation_of=job.user_id,
    )
    if job.guild_id:  # live: memory turned off here since the command was given
        from ..rights.servers import learnable_lines

        if not learnable_lines(server_of(deps, job.guild_id), [message]):
            _answer_remember(deps, job, "remember_server_off")
            return Extracted(SERVER_OFF, [], [], [])
    try:
        result = deps.extractor.run(Speaker(job.user_id, job.user_name), job.scope, [message], actor=Actor.COMMAND)
        extracted = Extracted(result.outcome, result.added, result.updated, result.deleted, tuple(result.changes))
        _count_learned(deps, job, result.model_calls, result.added, result.deleted)
    except ModelUnavailable:
        if not give_up():
            logger.warning("model unavailable: remember left for the worker's retry", extra=job.ids())
            raise
        logger.warning("model unavailable after every retry: nothing remembered", extra=job.ids())
        extracted = Extracted(DECISIONS_LOST, [], [], [])
    except Exception as exc:
        # Lambda runs a failed job again; on its last attempt the person is told rather than left
        # with Discord's "thinking" until the token expires, and the job still fails into the
        # dead-letter queue. What it had committed stays committed, so the answer promises nothing.
        if give_up():
            logger.warning("remember failed on its last attempt", extra={**job.ids(), "error": type(exc).__name__})
            _settle(deps, job, learned=False)
            _answer_remember(deps, job, "remember_failed")
        raise
    changed = extracted.added or extracted.updated or extracted.deleted
    # Learned from: the message is taken in for good. Otherwise the claim is given back (nothing
    # worth keeping, no decision now): a later "Remember this" on it may try again.
    _settle(deps, job, learned=bool(changed))
    if changed and receipt is not None and receipt(extracted):
        return extracted  # the receipt was the answer: what changed, each with its Undo
    _answer_remember(
        deps, job, "remember_will" if changed else REMEMBER_ANSWERS.get(extracted.outcome, "remember_nothing")
    )
    return extracted


def _settle(deps: RememberDeps, job: RememberJob, *, learned: bool) -> None:
    try:
        deps.remembered_messages.settle_message(
            Owner(job.scope, job.user_id), job.target_message_id, job.interaction_id, learned=learned
        )
    except Exception as exc:  # noqa: BLE001 - an unsettled claim lapses on its own (REMEMBER_CLAIM_LEASE)
        logger.warning("remember claim not settled", extra={**job.ids(), "error": type(exc).__name__})


def _answer_remember(deps: RememberDeps, job: RememberJob, key: str) -> None:
    try:
        deps.discord_webhooks.edit_original(job.application_id, job.token, text(key, job.locale))
    except Exception as exc:  # noqa: BLE001 - what was decided stays decided; the answer is a courtesy
        logger.warning("remember answer not sent", extra={**job.ids(), "error": type(exc).__name__})
