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
from typing import Any, Protocol

from ..core import commands, consent, conversation, history
from ..core.commands import CommandMemories
from ..core.domain import DM_SCOPE, GLOBAL_SCOPE, ScopeMode
from ..core.history import HistoryMemories
from ..core.jobs import ReplyJob
from ..core.ports import AsyncInvoker, DiscordApi, MessageStore, PeopleStore
from . import history_view
from .requests import (
    FORGET_ALL_TTL,
    MESSAGE_MAX_CHARS,
    BadRequest,
    Chat,
    ExportMemories,
    ForgetAllAsk,
    ForgetAllConfirm,
    ForgetMemory,
    PauseMemory,
    Ping,
    ResumeMemory,
    ShowHistory,
    ShowMemories,
    SuggestForget,
    UndoChange,
    UnknownComponent,
    Unsupported,
    WhyMemory,
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

TEXT_NOTHING_REMEMBERED = "I don't remember anything about you {where} yet."
TEXT_DM_SENT = "I sent you a DM with what I remember about you."
TEXT_DM_FAILED = (
    "I couldn't send you a DM, so I won't show your memories here. "
    "Allow direct messages from this server's members and try again."
)
# Where there is no server (the bot's DM, a group DM with a user-installed app) the fix is in
# the person's own Discord settings; with one profile everywhere we cannot tell where they are.
TEXT_DM_FAILED_NO_SERVER = (
    "I couldn't send you a DM, so I won't show your memories here. "
    "Check that you have not blocked me and that your Discord privacy settings allow direct "
    "messages from apps, then try again."
)
TEXT_DM_FAILED_ANYWHERE = (
    "I couldn't send you a DM, so I won't show your memories here. "
    'Allow direct messages from me (in a server: its privacy settings, "Direct Messages"; '
    "elsewhere: your Discord privacy settings) and try again."
)
TEXT_FORGET_WHICH = "Which memory should I forget? Give its id: /memory forget id:<id> (/memory show lists the ids)."
TEXT_STALE_COMPONENT = (
    "That button or form is not one I can act on (it may be from an older message). Use /memory or /chat instead."
)
TEXT_FORGOTTEN = "Forgotten: memory {memory_id} is deleted."
TEXT_NOT_FOUND = "Memory {memory_id} was not found among your memories."
TEXT_DM_PARTIAL = (
    "I sent you {sent} of {total} DMs with your memories; the rest could not be sent just now. "
    "/memory export sends them all as one file."
)
TEXT_WHY = "Memory {memory_id} was {verb} on {at} (UTC), from these messages of yours:\n{links}"
TEXT_WHY_NO_SOURCES = (
    "Memory {memory_id} was {verb} on {at} (UTC); I have no record of which messages (it predates provenance)."
)
TEXT_WHY_UNTIL = "It holds until {until}; after that I no longer use it in my replies."
TEXT_EXPORT_SENT = "I sent you a DM with a JSON file of everything I remember about you, and its history."
TEXT_EXPORT_FAILED = (
    "I couldn't send you a DM, so I won't export your memories here. "
    "Allow direct messages from this server's members and try again."
)
TEXT_NOTHING_TO_EXPORT = "I don't remember anything about you, anywhere."
TEXT_FORGET_ALL_ASK = (
    "Forget all {count} memories I have about you {where}? This cannot be undone. "
    "Only you can confirm, within 15 minutes."
)
TEXT_FORGET_ALL_DONE = "Forgotten: {count} memories about you {where} are deleted."
TEXT_FORGET_ALL_NOT_YOURS = "Sorry, only the person who asked can confirm this. Nothing was deleted."
TEXT_FORGET_ALL_EXPIRED = "Sorry, this confirmation expired. Nothing was deleted; ask again with /memory forget-all."
TEXT_PAUSED = (
    "Paused: from now on I won't learn from you or use what I remember about you, anywhere. "
    "Nothing is deleted: /memory show, export and forget still work. /memory resume turns it back on."
)
TEXT_ALREADY_PAUSED = "Memory was already paused. /memory resume turns it back on."
TEXT_RESUMED = (
    "Resumed: I'll learn from you and use what I remember again, from your next message. "
    "Nothing you said while memory was paused will be learned."
)
TEXT_NOT_PAUSED = "Memory is not paused: I'm learning as usual. /memory pause stops it."
TEXT_UNSUPPORTED = "Sorry, I don't know that command."
TEXT_EMPTY_CHAT = "Say something after /chat and I'll answer."
TEXT_BUSY = "Sorry, I can't answer right now. Please try again in a moment."
TEXT_ERROR = "Sorry, something went wrong on my side."


class InteractionMemories(CommandMemories, HistoryMemories, Protocol):
    """The roles of the memory store answering an interaction uses (the commands and the history)."""


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
    def discord_interactive(self) -> DiscordApi: ...

    @property
    def scope_mode(self) -> ScopeMode: ...

    @property
    def zone(self) -> tzinfo:
        """The deployment's time zone (the dates /memory history shows)."""

    def once(self, name: str, key: str, work: Callable[[], dict]) -> dict | None:
        """``work()``'s answer, computed once per key (the dedup ledger); None while another copy runs it."""


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


def scope_label(scope: str) -> str:
    """Where a listing's memories were learned, in words (the DM goes elsewhere, so say it)."""
    if scope == GLOBAL_SCOPE:
        return "everywhere I talk with you"
    if scope == DM_SCOPE:
        return "in our direct messages"
    kind, _, ident = scope.partition(":")
    return f"in the server {ident}" if kind == "guild" else f"in the group chat {ident}"


DM_HEADER = "Here is what I remember about you {where} (id, then the start of each memory):"
DM_FOOTER = "To make me forget one: /memory forget id:<id>"


def dm_text(lines: list[str], scope: str = GLOBAL_SCOPE) -> str:
    return dm_messages(lines, scope)[0]


def dm_messages(lines: list[str], scope: str = GLOBAL_SCOPE) -> list[str]:
    """The listing split into as few DMs as Discord's 2000 characters allow: the header opens
    the first, the footer closes the last, a line is never split (each is at most 86 characters)."""
    header = DM_HEADER.format(where=scope_label(scope))
    parts = [header, *lines, DM_FOOTER]
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
        request = parse(body, deps.scope_mode)
    except BadRequest as exc:
        logger.info("bad interaction", extra={"reason": str(exc)})
        return 400, {"error": "bad request"}
    if isinstance(request, Unsupported):
        return 200, choices([]) if request.autocomplete else ephemeral(TEXT_UNSUPPORTED)
    return 200, _HANDLERS[type(request)](request, deps)


def _ping(request: Ping, deps: Dependencies) -> dict:
    return {"type": PONG}


def _chat(request: Chat, deps: Dependencies) -> dict:
    if not request.text:
        return ephemeral(TEXT_EMPTY_CHAT)
    caller = request.caller
    job = ReplyJob(
        request.interaction_id,
        request.token,
        request.application_id,
        caller.channel_id,
        caller.user_id,
        caller.user_name,
        caller.scope,
        request.locale,
    )
    handed_on = conversation.hear(deps, job, request.text)
    return {"type": DEFERRED_CHANNEL_MESSAGE} if handed_on else ephemeral(TEXT_BUSY)


def _show(request: ShowMemories, deps: Dependencies) -> dict:
    # Discord's signature stays valid for minutes: a replayed request gets the first answer, no second DM.
    answer = deps.once("show", request.interaction_id, lambda: _show_once(request, deps))
    return answer if answer is not None else ephemeral(TEXT_BUSY)


# Every DM of a listing is sent inline (each REST call has a 1-second timeout); past this
# budget the rest are left, so the answer still reaches Discord within its 3 seconds.
SHOW_BUDGET_SECONDS = 2.0
MAX_SHOW_DMS = 10  # about 200 memories; beyond, the answer points to /memory export


def _show_once(request: ShowMemories, deps: Dependencies) -> dict:
    answer = _show_listing(request, deps)
    paused_at = deps.people_store.get(request.caller.user_id).paused_at
    if paused_at is not None:  # /memory show says when memory is paused
        answer["data"]["content"] += "\n" + consent.paused_note(paused_at)
    return answer


def _show_listing(request: ShowMemories, deps: Dependencies) -> dict:
    lines = commands.show(deps.memory_store, request.caller.owner)
    if not lines:
        return ephemeral(TEXT_NOTHING_REMEMBERED.format(where=scope_label(request.caller.scope)))
    messages = dm_messages(lines, request.caller.scope)
    started = time.monotonic()
    sent = 0
    try:
        discord = deps.discord_interactive
        channel = discord.open_dm(request.caller.user_id)
        for text in messages[:MAX_SHOW_DMS]:
            if sent and time.monotonic() - started > SHOW_BUDGET_SECONDS:
                break
            discord.send_message(channel, text)
            sent += 1
    except Exception as exc:  # noqa: BLE001 - 50007 or anything else: say so, repeat nothing
        logger.info(
            "memory DM failed", extra={"user_id": request.caller.user_id, "error": type(exc).__name__, "sent": sent}
        )
    if sent == 0:
        return ephemeral(dm_failed_text(request.caller.scope))
    if sent < len(messages):
        return ephemeral(TEXT_DM_PARTIAL.format(sent=sent, total=len(messages)))
    return ephemeral(TEXT_DM_SENT)


def dm_failed_text(scope: str) -> str:
    """The advice for a DM that failed, fitted to where the person is: only a server has members' DM settings."""
    if scope.startswith("guild:"):
        return TEXT_DM_FAILED
    return TEXT_DM_FAILED_ANYWHERE if scope == GLOBAL_SCOPE else TEXT_DM_FAILED_NO_SERVER


def _why(request: WhyMemory, deps: Dependencies) -> dict:
    found = commands.why(deps.memory_store, request.caller.owner, request.memory_id)
    if found is None:
        return ephemeral(TEXT_NOT_FOUND.format(memory_id=request.memory_id.strip().lower()[:20] or "(none)"))
    verb = "learned" if found.action.value == "add" else "last changed"
    at = found.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    until = "\n" + TEXT_WHY_UNTIL.format(until=found.valid_until.isoformat()) if found.valid_until else ""
    if not found.links:
        return ephemeral(TEXT_WHY_NO_SOURCES.format(memory_id=found.memory_id, verb=verb, at=at) + until)
    text = TEXT_WHY.format(memory_id=found.memory_id, verb=verb, at=at, links="\n".join(found.links))
    return ephemeral((text + until)[:MESSAGE_MAX_CHARS])


EXPORT_FILENAME = "memorybot-export.json"


def _export(request: ExportMemories, deps: Dependencies) -> dict:
    answer = deps.once("export", request.interaction_id, lambda: _export_once(request, deps))
    return answer if answer is not None else ephemeral(TEXT_BUSY)


def _export_once(request: ExportMemories, deps: Dependencies) -> dict:
    data = commands.export(deps.memory_store, request.caller.user_id, deps.people_store)
    switch = data.get("memorySwitch") or {}
    if not data["scopes"] and not (switch.get("ledger") or switch.get("noticeGivenIn") or switch.get("paused")):
        return ephemeral(TEXT_NOTHING_TO_EXPORT)
    raw = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    try:
        discord = deps.discord_interactive
        discord.send_file(
            discord.open_dm(request.caller.user_id), "Your memorybot export (every scope).", EXPORT_FILENAME, raw
        )
    except Exception as exc:  # noqa: BLE001 - say so, repeat nothing
        logger.info("export DM failed", extra={"user_id": request.caller.user_id, "error": type(exc).__name__})
        return ephemeral(TEXT_EXPORT_FAILED)
    return ephemeral(TEXT_EXPORT_SENT)


def _forget_all_ask(request: ForgetAllAsk, deps: Dependencies) -> dict:
    caller = request.caller
    count = commands.count(deps.memory_store, caller.owner)
    where = scope_label(caller.scope)
    if not count:
        return ephemeral(TEXT_NOTHING_REMEMBERED.format(where=where))
    answer = ephemeral(TEXT_FORGET_ALL_ASK.format(count=count, where=where))
    button = {
        "type": BUTTON,
        "style": DANGER_STYLE,
        "label": "Forget everything",
        "custom_id": forget_all_button(caller.user_id, datetime.now(UTC)),
    }
    answer["data"]["components"] = [{"type": ACTION_ROW, "components": [button]}]
    return answer


FORGET_ALL_CLOCK_SKEW_SECONDS = 60  # a button "asked" up to a minute in the future still counts


def _forget_all_confirm(request: ForgetAllConfirm, deps: Dependencies) -> dict:
    caller = request.caller
    if caller.user_id != request.requester:
        logger.info("forget-all refused: not the requester", extra={"user_id": caller.user_id})
        return ephemeral(TEXT_FORGET_ALL_NOT_YOURS)
    # In whole seconds, never through a datetime: a time out of its range (year 10,000) is simply not now.
    now = time.time()
    if not request.asked_at - FORGET_ALL_CLOCK_SKEW_SECONDS <= now <= request.asked_at + FORGET_ALL_TTL.total_seconds():
        return ephemeral(TEXT_FORGET_ALL_EXPIRED)
    # One button, one forget-all: a second press (or a replay) gets the first answer and deletes
    # nothing learned since. The custom_id (who asked, when) and the scope name the button.
    key = f"{caller.scope}:{request.requester}:{request.asked_at}"
    answer = deps.once("forget-all", key, lambda: _forget_all_once(request, deps))
    return answer if answer is not None else ephemeral(TEXT_BUSY)


def _forget_all_once(request: ForgetAllConfirm, deps: Dependencies) -> dict:
    caller = request.caller
    deleted = commands.forget_all(deps.memory_store, caller.owner, deps.people_store)
    logger.info("forget-all done", extra={"user_id": caller.user_id, "deleted": len(deleted)})
    text = TEXT_FORGET_ALL_DONE.format(count=len(deleted), where=scope_label(caller.scope))
    return {"type": UPDATE_MESSAGE, "data": {"content": text, "components": [], "allowed_mentions": NO_MENTIONS}}


def _forget(request: ForgetMemory, deps: Dependencies) -> dict:
    if not request.memory_id.strip():
        return ephemeral(TEXT_FORGET_WHICH)
    result = commands.forget(deps.memory_store, request.caller.owner, request.memory_id)
    template = TEXT_FORGOTTEN if result.outcome is commands.ForgetOutcome.FORGOTTEN else TEXT_NOT_FOUND
    return ephemeral(template.format(memory_id=result.memory_id[:20] or "(none)"))


def _suggest(request: SuggestForget, deps: Dependencies) -> dict:
    return choices(commands.suggest(deps.memory_store, request.caller.owner, request.typed))


def _pause(request: PauseMemory, deps: Dependencies) -> dict:
    switched = consent.pause(deps.people_store, request.caller.user_id, datetime.now(UTC))
    logger.info("memory pause", extra={"user_id": request.caller.user_id, "changed": switched.changed})
    return ephemeral(TEXT_PAUSED if switched.changed else TEXT_ALREADY_PAUSED)


def _resume(request: ResumeMemory, deps: Dependencies) -> dict:
    switched = consent.resume(deps.people_store, request.caller.user_id, datetime.now(UTC))
    logger.info("memory resume", extra={"user_id": request.caller.user_id, "changed": switched.changed})
    return ephemeral(TEXT_RESUMED if switched.changed else TEXT_NOT_PAUSED)


def _history(request: ShowHistory, deps: Dependencies) -> dict:
    caller = request.caller
    if request.requester and request.requester != caller.user_id:
        return ephemeral(history_view.not_yours_text(request.locale))
    page = history.history(deps.memory_store, caller.owner, older_than=request.older_than, people=deps.people_store)
    data = history_view.page_answer(
        page, caller.user_id, caller.scope, deps.zone, request.locale, older=bool(request.older_than)
    )
    if request.requester:  # the "Older" button: the page turns in place
        return {"type": UPDATE_MESSAGE, "data": {**data, "allowed_mentions": NO_MENTIONS}}
    answer = ephemeral(data["content"])
    answer["data"]["components"] = data["components"]
    return answer


def _undo(request: UndoChange, deps: Dependencies) -> dict:
    caller = request.caller
    if request.requester != caller.user_id:
        logger.info("undo refused: not the owner", extra={"user_id": caller.user_id})
        return ephemeral(history_view.not_yours_text(request.locale))
    # A replay of the same click gets the first answer; a new click is judged afresh.
    answer = deps.once("undo", request.interaction_id, lambda: _undo_once(request, deps))
    return answer if answer is not None else ephemeral(TEXT_BUSY)


def _undo_once(request: UndoChange, deps: Dependencies) -> dict:
    result = history.undo(deps.memory_store, request.caller.owner, request.key)
    return ephemeral(history_view.undo_text(result, request.locale))


def _unknown_component(request: UnknownComponent, deps: Dependencies) -> dict:
    logger.info("component not acted on", extra={"custom_id": request.custom_id})
    return ephemeral(TEXT_STALE_COMPONENT)


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
    ShowHistory: _history,
    UndoChange: _undo,
    UnknownComponent: _unknown_component,
}
