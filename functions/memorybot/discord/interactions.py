"""Typed requests in (``requests.parse``), the core's use cases called, Discord's answers out.

``respond`` answers one verified request body with (HTTP status, JSON body). Anything it
does not understand gets a 400 or a polite ephemeral message, and nothing is written.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any, Protocol

from ..core.record.catalog import text
from ..core.record.catalog import where_label as scope_label
from ..core.record.dates import local_stamp
from ..core.record.jobs import ForgetAllJob, RememberJob, ReplyJob
from ..core.record.terms import GLOBAL_SCOPE, Actor, Owner, ScopeMode, iso, shows_nothing, snowflake_time, utcnow
from ..core.turn import hearing
from ..lazy import lazy
from .formats import markdown_escaped

if TYPE_CHECKING:
    from ..core.record.person import Person
    from ..core.record.ports import AsyncInvoker, DiscordApi, MessageStore, Metrics, PeopleStore, RememberedMessages
    from ..core.rights import commands, consent, everywhere, history, why
    from ..core.rights.commands import CommandMemories
    from ..core.rights.history import HistoryMemories
    from ..core.rights.why import WhyMemories
    from . import history_view, receipts_view, server_admin
    from .guilds import GuildNames
    from .server_admin import ServerDeps

    class InteractionMemories(CommandMemories, HistoryMemories, WhyMemories, Protocol):
        """The roles of the memory store answering an interaction uses (the commands, the history, why)."""

else:  # a cold start imports what every answer needs; each command's own modules load when it first comes
    commands, consent, everywhere, history, why = (
        lazy(f"memorybot.core.rights.{name}") for name in ("commands", "consent", "everywhere", "history", "why")
    )
    history_view, receipts_view, server_admin = (
        lazy(f"memorybot.discord.{name}") for name in ("history_view", "receipts_view", "server_admin")
    )
from .requests import (
    FORGET_ALL_TTL,
    MESSAGE_MAX_CHARS,
    BadRequest,
    Caller,
    ChangeSetting,
    Chat,
    ExportMemories,
    ForgetAllAsk,
    ForgetAllConfirm,
    ForgetMemory,
    MoveMemory,
    PauseMemory,
    Ping,
    RememberMessage,
    ResumeMemory,
    SetReceipts,
    ShowHistory,
    ShowMemories,
    ShowSettings,
    SuggestEverywhere,
    SuggestForget,
    UndoChange,
    UnknownComponent,
    Unsupported,
    WhyMemory,
    WhyReply,
    forget_all_button,
    parse,
)

logger = logging.getLogger(__name__)

# Discord's numbers for answers.
PONG, CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE, UPDATE_MESSAGE, AUTOCOMPLETE_RESULT = 1, 4, 5, 7, 8
ACTION_ROW, BUTTON, DANGER_STYLE = 1, 2, 4
EPHEMERAL = 64
MAX_CHOICES = 25
CHOICE_NAME_MAX_CHARS = 100
NO_MENTIONS: dict[str, list[str]] = {"parse": []}


class Places(Protocol):
    """Where an answer is given: the deployment's scope mode, server names and time zone."""

    @property
    def scope_mode(self) -> ScopeMode: ...

    @property
    def guild_names(self) -> GuildNames: ...

    @property
    def zone(self) -> tzinfo:
        """The deployment's time zone: every time a person reads is in it, labelled."""


class Dependencies(Protocol):
    """What answering needs (bootstrap.Container provides it)."""

    # Read-only: the container builds each once (cached properties).
    @property
    def message_store(self) -> MessageStore: ...

    @property
    def memory_store(self) -> InteractionMemories: ...

    @property
    def invoker(self) -> AsyncInvoker: ...

    @property
    def people_store(self) -> PeopleStore: ...

    @property
    def remembered_messages(self) -> RememberedMessages: ...

    @property
    def discord_interactive(self) -> DiscordApi: ...

    @property
    def metrics(self) -> Metrics:
        """Counts for the operator (memories forgotten), written out when the invocation ends."""

    def once(self, name: str, key: str, work: Callable[[], dict]) -> dict | None:
        """``work()``'s answer, computed once per key (the dedup ledger); None while another copy runs it."""

    @property
    def places(self) -> Places:
        """Where answers are given: the scope mode, server names and the time zone."""

    @property
    def servers(self) -> ServerDeps:
        """A server's own settings (/memory-settings, server_admin.py)."""


# ---------------------------------------------------------------- answers


def ephemeral(text: str) -> dict:
    return {"type": CHANNEL_MESSAGE, "data": {"content": text, "flags": EPHEMERAL, "allowed_mentions": NO_MENTIONS}}


def choices(pairs: list[tuple[str, str]]) -> dict:
    return {
        "type": AUTOCOMPLETE_RESULT,
        "data": {
            "choices": [{"name": label[:CHOICE_NAME_MAX_CHARS], "value": value} for value, label in pairs[:MAX_CHOICES]]
        },
    }


def say(key: str, caller: Caller | str, **fields: object) -> dict:
    """An ephemeral answer: the catalog's ``key`` in the language of the caller (or of a locale)."""
    return ephemeral(text(key, caller if isinstance(caller, str) else caller.locale, **fields))


def where(caller: Caller, deps: Dependencies) -> str:
    """The caller's scope in words, in their language: a server named by the interaction's guild
    data, else by one cached REST read (``GuildNames``), else by its id. The name is the server's
    owners' text: shown as written, never as markup."""
    kind, _, ident = caller.scope.partition(":")
    name = caller.guild_name or (deps.places.guild_names.name(ident) if kind == "guild" else None) or ""
    return scope_label(caller.scope, caller.locale, markdown_escaped(name))


def dm_text(lines: list[str], scope: str = GLOBAL_SCOPE, locale: str = "") -> str:
    return dm_messages(lines, scope_label(scope, locale), locale)[0]


def dm_messages(lines: list[str], where: str, locale: str = "", header_note: str = "") -> list[str]:
    """The listing split into as few DMs as Discord's 2000 characters allow: the header (with
    ``header_note`` after it, on its line) opens the first, the footer closes the last, a line is
    never split (each is at most 86 characters, twice that where every character of the memory is
    escaped)."""
    header = text("dm_header", locale, where=where) + (f" {header_note}" if header_note else "")
    parts = [header, *lines, text("dm_footer", locale)]
    messages: list[str] = []
    current = ""
    for part in parts:
        part = part[:MESSAGE_MAX_CHARS]
        if current and len(current) + 1 + len(part) > MESSAGE_MAX_CHARS:
            messages.append(current)
            current = part
        else:
            current = f"{current}\n{part}" if current else part
    messages.append(current)
    return messages


def respond(body: bytes, deps: Dependencies) -> tuple[int, dict]:
    """(HTTP status, JSON body) for one request whose signature has been verified."""
    try:
        request = parse(body, deps.places.scope_mode)
    except BadRequest as exc:
        logger.info("bad interaction", extra={"reason": str(exc)})
        return 400, {"error": "bad request"}
    if isinstance(request, Unsupported):
        return 200, choices([]) if request.autocomplete else say("unsupported", request.locale)
    # the server's answer language, if its admins chose one
    request = server_admin.in_server_locale(request, deps.servers)
    return 200, _HANDLERS[type(request)](request, deps)


def _ping(request: Ping, deps: Dependencies) -> dict:
    return {"type": PONG}


def _chat(request: Chat, deps: Dependencies) -> dict:
    if not request.text:
        return say("empty_chat", request.caller)
    refused = server_admin.chat_refusal(request, deps.servers)  # the server's channels and daily limit
    if refused is not None:
        return refused
    caller = request.caller
    job = ReplyJob(*_answered_by_worker(request), guild_id=caller.guild_id)
    handed_on = hearing.hear(deps, job, request.text)
    return {"type": DEFERRED_CHANNEL_MESSAGE} if handed_on else say("busy", caller)


# (interaction id, token, application id, channel id, user id, user name, scope, locale)
WorkerAnswer = tuple[str, str, str, str, str, str, str, str]


def _answered_by_worker(request: Chat | RememberMessage) -> WorkerAnswer:
    """What a worker needs to fill in a deferred answer for the caller, in the order the jobs
    take it: the interaction, who asked, where, and in which language."""
    caller = request.caller
    return (
        request.interaction_id,
        request.token,
        request.application_id,
        caller.channel_id,
        caller.user_id,
        caller.user_name,
        caller.scope,
        caller.locale,
    )


def _show(request: ShowMemories, deps: Dependencies) -> dict:
    # Discord's signature stays valid for minutes: a replayed request gets the first answer, no second DM.
    answer = deps.once("show", request.interaction_id, lambda: _show_once(request, deps))
    return answer if answer is not None else say("busy", request.caller)


# Every DM of a listing is sent inline (each REST call has a 1-second timeout); past this
# budget the rest are left, so the answer still reaches Discord within its 3 seconds.
SHOW_BUDGET_SECONDS = 2.0
MAX_SHOW_DMS = 10  # about 200 memories; beyond, the answer points to /memory export


def _show_once(request: ShowMemories, deps: Dependencies) -> dict:
    person = deps.people_store.get(request.caller.user_id)
    answer = _show_listing(request, deps, person.receipts)
    paused_at = person.paused_at
    if paused_at is not None:  # /memory show says when memory is paused
        answer["data"]["content"] += "\n" + consent.paused_note(paused_at, deps.places.zone, request.caller.locale)
    return answer


def _show_listing(request: ShowMemories, deps: Dependencies, receipts: bool = True) -> dict:
    caller = request.caller
    lines = commands.show(deps.memory_store, caller.owner, caller.locale, quote=markdown_escaped)
    yours = everywhere.read_everywhere(deps.memory_store, caller.user_id, actor=Actor.COMMAND, reason="memory show")
    if yours:  # marked apart: read here and everywhere else too
        lines += [
            text("show_everywhere_header", caller.locale),
            *(commands.preview(m, caller.locale, markdown_escaped) for m in yours),
        ]
    if not lines:
        return say("nothing_remembered", caller, where=where(caller, deps))
    # The header says whether receipts are on (/memory receipts).
    receipts_note = text("show_receipts_on" if receipts else "show_receipts_off", caller.locale)
    messages = dm_messages(lines, where(caller, deps), caller.locale, receipts_note)
    started = time.monotonic()
    sent = 0
    try:
        discord = deps.discord_interactive
        channel = discord.open_dm(request.caller.user_id)
        for message in messages[:MAX_SHOW_DMS]:
            if sent and time.monotonic() - started > SHOW_BUDGET_SECONDS:
                break
            discord.send_message(channel, message)
            sent += 1
    except Exception as exc:  # noqa: BLE001 - 50007 or anything else: say so, repeat nothing
        logger.info(
            "memory DM failed", extra={"user_id": request.caller.user_id, "error": type(exc).__name__, "sent": sent}
        )
    if sent == 0:
        return say(dm_failed_key(caller.scope), caller)
    if sent < len(messages):
        return say("dm_partial", caller, sent=sent, total=len(messages))
    return say("dm_sent", caller)


def dm_failed_key(scope: str) -> str:
    """The advice for a DM that failed, fitted to where the person is: only a server has members' DM settings."""
    if scope.startswith("guild:"):
        return "dm_failed"
    return "dm_failed_anywhere" if scope == GLOBAL_SCOPE else "dm_failed_no_server"


def _why(request: WhyMemory, deps: Dependencies) -> dict:
    caller = request.caller
    found = commands.why(deps.memory_store, caller.owner, request.memory_id)
    moved = found is None
    if moved:  # one of their "everywhere" memories, listed in show (as _forget looks too)
        found = commands.why(deps.memory_store, everywhere.everywhere_of(caller.user_id), request.memory_id)
    if found is None:
        return say("not_found", caller, memory_id=shown_id(request.memory_id.strip().lower(), caller.locale))
    verb = text("why_verb_learned" if found.action.value == "add" else "why_verb_changed", caller.locale)
    at = local_stamp(found.at, deps.places.zone)
    until = "\n" + text("why_until", caller.locale, until=found.valid_until.isoformat()) if found.valid_until else ""
    if moved:  # its messages were in the server or DM it came from, which the memory does not name
        return ephemeral(text("why_everywhere", caller.locale, memory_id=found.memory_id, verb=verb, at=at) + until)
    if not found.links:
        return ephemeral(text("why_no_sources", caller.locale, memory_id=found.memory_id, verb=verb, at=at) + until)
    answer = text("why", caller.locale, memory_id=found.memory_id, verb=verb, at=at, links="\n".join(found.links))
    return ephemeral((answer + until)[:MESSAGE_MAX_CHARS])


def shown_id(memory_id: str, locale: str) -> str:
    """A typed memory id as an answer repeats it: at most 20 characters, shown as typed (never as
    markup), "(none)" for nothing."""
    return markdown_escaped(memory_id[:20]) or text("no_memory_id", locale)


EXPORT_FILENAME = "memorybot-export.json"


def _export(request: ExportMemories, deps: Dependencies) -> dict:
    answer = deps.once("export", request.interaction_id, lambda: _export_once(request, deps))
    return answer if answer is not None else say("busy", request.caller)


def _export_once(request: ExportMemories, deps: Dependencies) -> dict:
    data = commands.export(deps.memory_store, request.caller.user_id, deps.people_store)
    switch = data.get("memorySwitch") or {}
    if not data["scopes"] and not (switch.get("ledger") or switch.get("noticeGivenIn") or switch.get("paused")):
        return say("nothing_to_export", request.caller)
    raw = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    try:
        discord = deps.discord_interactive
        content = text("export_dm", request.caller.locale)
        discord.send_file(discord.open_dm(request.caller.user_id), content, EXPORT_FILENAME, raw)
    except Exception as exc:  # noqa: BLE001 - say so, repeat nothing
        logger.info("export DM failed", extra={"user_id": request.caller.user_id, "error": type(exc).__name__})
        return say("export_failed", request.caller)
    return say("export_sent", request.caller)


def _forget_all_ask(request: ForgetAllAsk, deps: Dependencies) -> dict:
    caller = request.caller
    count = commands.count(deps.memory_store, caller.owner)
    yours = _everywhere_count(deps, caller) if request.everywhere else 0
    here = where(caller, deps)
    if not count and not yours:
        return say("nothing_remembered", caller, where=here)
    answer = say("forget_all_ask", caller, count=count, where=here)
    if yours:  # everywhere:true: the person's own scope goes too
        answer["data"]["content"] += "\n" + text("forget_all_everywhere_too", caller.locale, count=yours)
    button = {
        "type": BUTTON,
        "style": DANGER_STYLE,
        "label": text("forget_all_button", caller.locale),
        "custom_id": forget_all_button(caller.user_id, datetime.now(UTC), request.everywhere),
    }
    answer["data"]["components"] = [{"type": ACTION_ROW, "components": [button]}]
    return answer


FORGET_ALL_CLOCK_SKEW_SECONDS = 60  # a button "asked" up to a minute in the future still counts


def _forget_all_confirm(request: ForgetAllConfirm, deps: Dependencies) -> dict:
    caller = request.caller
    if caller.user_id != request.requester:
        logger.info("forget-all refused: not the requester", extra={"user_id": caller.user_id})
        return say("forget_all_not_yours", caller)
    # In whole seconds, never through a datetime: a time out of its range (year 10,000) is simply not now.
    now = time.time()
    if not request.asked_at - FORGET_ALL_CLOCK_SKEW_SECONDS <= now <= request.asked_at + FORGET_ALL_TTL.total_seconds():
        return say("forget_all_expired", caller)
    # One button, one forget-all: a second press (or a replay) gets the first answer and deletes
    # nothing learned since. The custom_id (who asked, when) and the scope name the button.
    key = f"{caller.scope}:{request.requester}:{request.asked_at}{':e' if request.everywhere else ''}"
    answer = deps.once("forget-all", key, lambda: _forget_all_once(request, deps))
    return answer if answer is not None else say("busy", caller)


def _forget_all_once(request: ForgetAllConfirm, deps: Dependencies) -> dict:
    """Stamp the forget-all and hand its deletes to a job (a profile of thousands takes longer than
    Discord's 3 s); the job updates this confirmation when it is done. While another forget-all's
    job runs in the scope, nothing more is started."""
    caller = request.caller
    here = where(caller, deps)
    started = commands.begin_forget_all(deps.people_store, caller.owner, request.interaction_id)
    if started is None:
        logger.info("forget-all refused: one is running", extra={"user_id": caller.user_id})
        return _confirmation(text("forget_all_running", caller.locale, where=here))
    job = ForgetAllJob(
        request.interaction_id,
        request.token,
        request.application_id,
        caller.user_id,
        caller.scope,
        caller.locale,
        here,
        iso(started),
        everywhere=request.everywhere,
    )
    try:
        deps.invoker.invoke(job)
    except Exception:
        # No job runs: the scope is not left marked as forgetting (what was said before stays unlearnable).
        deps.people_store.finish_forget_all(caller.user_id, caller.scope, started, started)
        logger.error("forget-all hand-off failed", extra=job.ids())
        raise
    logger.info("forget-all started", extra=job.ids())
    return _confirmation(text("forget_all_started", caller.locale, where=here))


def _confirmation(content: str) -> dict:
    """The forget-all confirmation rewritten in place, its button gone."""
    return {"type": UPDATE_MESSAGE, "data": {"content": content, "components": [], "allowed_mentions": NO_MENTIONS}}


def _everywhere_count(deps: Dependencies, caller: Caller) -> int:
    reason = commands.FORGET_ALL_COUNT_REASON
    return len(everywhere.read_everywhere(deps.memory_store, caller.user_id, actor=Actor.COMMAND, reason=reason))


def _count_forgotten(deps: Dependencies, count: int) -> None:
    from ..core.record.metrics import MEMORIES_FORGOTTEN  # on a forget only: the cold start imports nothing more

    deps.metrics.add(MEMORIES_FORGOTTEN, count)


def _forget(request: ForgetMemory, deps: Dependencies) -> dict:
    caller = request.caller
    if not request.memory_id.strip():
        return say("forget_which", caller)
    result = commands.forget(deps.memory_store, caller.owner, request.memory_id)
    if result.outcome is commands.ForgetOutcome.NOT_FOUND:  # one of their "everywhere" memories, listed in show
        result = commands.forget(deps.memory_store, everywhere.everywhere_of(caller.user_id), request.memory_id)
    key = "forgotten" if result.outcome is commands.ForgetOutcome.FORGOTTEN else "not_found"
    if result.outcome is commands.ForgetOutcome.FORGOTTEN:
        _count_forgotten(deps, 1)
        server_admin.forgotten(deps.servers, caller, 1)
    return say(key, caller, memory_id=shown_id(result.memory_id, caller.locale))


def _suggest(request: SuggestForget, deps: Dependencies) -> dict:
    return choices(commands.suggest(deps.memory_store, request.caller.owner, request.typed, request.caller.locale))


def _pause(request: PauseMemory, deps: Dependencies) -> dict:
    switched = consent.pause(deps.people_store, request.caller.user_id, datetime.now(UTC))
    logger.info("memory pause", extra={"user_id": request.caller.user_id, "changed": switched.changed})
    return say("paused" if switched.changed else "already_paused", request.caller)


def _resume(request: ResumeMemory, deps: Dependencies) -> dict:
    switched = consent.resume(deps.people_store, request.caller.user_id, datetime.now(UTC))
    logger.info("memory resume", extra={"user_id": request.caller.user_id, "changed": switched.changed})
    return say("resumed" if switched.changed else "not_paused", request.caller)


def _history(request: ShowHistory, deps: Dependencies) -> dict:
    caller = request.caller
    if request.requester and request.requester != caller.user_id:
        return say("history_not_yours", caller)
    page = history.history(deps.memory_store, caller.owner, older_than=request.older_than, people=deps.people_store)
    older = bool(request.older_than)
    data = history_view.page_answer(
        page, caller.user_id, caller.scope, deps.places.zone, caller.locale, older=older, place=where(caller, deps)
    )
    if request.requester and request.older_than:  # the "Older" button: the page turns in place
        return {"type": UPDATE_MESSAGE, "data": {**data, "allowed_mentions": NO_MENTIONS}}
    answer = ephemeral(data["content"])
    answer["data"]["components"] = data["components"]
    return answer


def _undo(request: UndoChange, deps: Dependencies) -> dict:
    caller = request.caller
    if request.requester != caller.user_id:
        logger.info("undo refused: not the owner", extra={"user_id": caller.user_id})
        return say("history_not_yours", caller)
    # A replay of the same click gets the first answer; a new click is judged afresh.
    answer = deps.once("undo", request.interaction_id, lambda: _undo_once(request, deps))
    return answer if answer is not None else say("busy", caller)


def _undo_once(request: UndoChange, deps: Dependencies) -> dict:
    result = history.undo(deps.memory_store, request.caller.owner, request.key)
    return ephemeral(history_view.undo_text(result, request.caller.locale))


def _unknown_component(request: UnknownComponent, deps: Dependencies) -> dict:
    logger.info("component not acted on", extra={"custom_id": request.custom_id})
    return say("stale_component", request.locale)


def _remember(request: RememberMessage, deps: Dependencies) -> dict:
    """ "Remember this": only on the person's own message, never while paused; the extraction runs
    in the extraction worker (models take longer than Discord's 3 s), which fills in this
    deferred, ephemeral answer with what happened."""
    caller, target = request.caller, request.target
    if target is None:
        logger.info("remember refused: no readable target", extra={"user_id": caller.user_id})
        return say("remember_unreadable", caller)
    if target.author_id != caller.user_id:  # only a person's own words decide their memories
        logger.info("remember refused: not their message", extra={"user_id": caller.user_id})
        return say("remember_not_yours", caller)
    if shows_nothing(target.content):  # the import's rule: nothing visible is nothing to learn
        return say("remember_no_text", caller)
    refused = server_admin.remember_refusal(request, deps.servers)  # the server's channels, memory off
    if refused is not None:
        return refused
    person = deps.people_store.get(caller.user_id)
    if person.paused:
        return say("remember_paused", caller)
    # A message is taken in once per person: of clicks at once, or one later, the first claim
    # runs the job; every other click is told so, and no model is asked again.
    owner = Owner(caller.scope, caller.user_id)
    if not deps.remembered_messages.claim_message(owner, target.message_id, request.interaction_id, utcnow()):
        logger.info("remember refused: the message is taken in already", extra={"user_id": caller.user_id})
        return say(
            "remember_nothing" if _never_teaches_again(deps, person, owner, target.message_id) else "remember_already",
            caller,
        )
    job = RememberJob(*_answered_by_worker(request), target.message_id, target.content, caller.guild_id)
    try:
        deps.invoker.invoke(job)
    except Exception as exc:  # noqa: BLE001 - the person gets an answer either way
        logger.error("remember hand-off failed", extra={**job.ids(), "error": type(exc).__name__})
        try:
            deps.remembered_messages.settle_message(owner, target.message_id, request.interaction_id, learned=False)
        except Exception:  # noqa: BLE001 - an unsettled claim lapses on its own (REMEMBER_CLAIM_LEASE)
            logger.warning("remember claim not given back", extra=job.ids())
        return say("busy", caller)
    return {"type": DEFERRED_CHANNEL_MESSAGE, "data": {"flags": EPHEMERAL}}


def _never_teaches_again(deps: Dependencies, person: Person, owner: Owner, message_id: str) -> bool:
    """Whether a message taken in before can no longer teach: what it taught was forgotten (its
    id among the forgotten sources), or a forget-all in the scope or an erasure came after it was
    said. Then "nothing there to remember" is the answer, as the job would give, not "remembered"."""
    said = snowflake_time(message_id)
    ended = [at for at in (person.erased_at, person.forgot_all_in(owner.scope)) if at is not None]
    return any(at >= said for at in ended) or message_id in deps.memory_store.forgotten_sources(owner)


# ---- receipts, "Why?" and "everywhere" memories (core/rights/: receipts.py, why.py, everywhere.py)


def _set_receipts(request: SetReceipts, deps: Dependencies) -> dict:
    changed = deps.people_store.set_receipts(request.caller.user_id, request.enabled)
    state = "on" if request.enabled else "off"
    return say(f"receipts_{state}" if changed else f"receipts_already_{state}", request.caller)


def _why_reply(request: WhyReply, deps: Dependencies) -> dict:
    caller = request.caller
    if request.requester != caller.user_id:  # nothing read, nothing logged: only the asker may see it
        logger.info("reply why refused: not the asker", extra={"user_id": caller.user_id})
        return say("why_reply_not_yours", caller)
    answer = why.why_reply(deps.memory_store, everywhere.owners_read(caller.owner), request.reply_interaction_id)
    return ephemeral(receipts_view.why_text(answer, deps.places.zone, caller.locale))


# By the outcome's value (MoveOutcome is a str enum): the module loads with the first move, not the cold start.
MOVE_ANSWERS = {"not_found": "move_not_found", "blocked": "move_blocked", "changed": "move_changed"}


def _move(request: MoveMemory, deps: Dependencies) -> dict:
    caller = request.caller
    if not request.memory_id.strip():
        return say("forget_which", caller)
    result = everywhere.move(deps.memory_store, caller.owner, request.memory_id, everywhere=request.everywhere)
    memory_id = shown_id(result.memory_id, caller.locale)
    if result.outcome is everywhere.MoveOutcome.MOVED:
        if request.everywhere:
            return say("moved_everywhere", caller, memory_id=memory_id)
        return say("moved_here", caller, memory_id=memory_id, where=where(caller, deps))
    return say(MOVE_ANSWERS[result.outcome], caller, memory_id=memory_id)


def _suggest_everywhere(request: SuggestEverywhere, deps: Dependencies) -> dict:
    # Read only when there are some: a person with none gets no row in a scope of their own.
    caller = request.caller
    yours = everywhere.read_everywhere(
        deps.memory_store, caller.user_id, actor=Actor.COMMAND, reason=commands.SUGGEST_REASON
    )
    return choices(commands.matching(yours, request.typed, caller.locale))


def error_answer(body: bytes) -> dict:
    """The apology for an interaction that failed on our side, in the person's language if the
    body says it (it may be what failed to parse)."""
    try:
        payload = json.loads(body)
        locale = payload.get("locale") if isinstance(payload, dict) else ""
    except (ValueError, UnicodeDecodeError, RecursionError):
        locale = ""
    return say("error", locale if isinstance(locale, str) else "")


_HANDLERS: dict[type, Callable[[Any, Dependencies], dict]] = {
    Ping: _ping,
    Chat: _chat,
    ShowMemories: _show,
    ForgetMemory: _forget,
    SuggestForget: _suggest,
    WhyMemory: _why,
    ExportMemories: _export,
    ForgetAllAsk: _forget_all_ask,
    ForgetAllConfirm: _forget_all_confirm,
    PauseMemory: _pause,
    ResumeMemory: _resume,
    RememberMessage: _remember,
    ShowHistory: _history,
    UndoChange: _undo,
    UnknownComponent: _unknown_component,
    SetReceipts: _set_receipts,
    WhyReply: _why_reply,
    MoveMemory: _move,
    SuggestEverywhere: _suggest_everywhere,
    # /memory-settings (a server's admins)
    ShowSettings: lambda request, deps: server_admin.show_settings(request, deps.servers),
    ChangeSetting: lambda request, deps: server_admin.change_setting(request, deps.servers),
}
