"""Discord interaction payloads in, core calls out: the only module that knows their shape.

``respond`` answers one verified request body with (HTTP status, JSON body). Anything it
does not understand gets a 400 or a polite ephemeral message, and nothing is written.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..core import commands, conversation
from ..core.domain import DM_SCOPE, GLOBAL_SCOPE, Owner, ScopeMode, scope_for
from ..core.jobs import ReplyJob
from ..core.ports import AsyncInvoker, DiscordApi, MemoryStore, MessageStore
from .formats import is_interaction_token, is_snowflake

logger = logging.getLogger(__name__)

# Discord's numbers.
PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 1, 2, 3, 4, 5
CONTEXT_BOT_DM = 1  # interaction context types: 0 guild, 1 the bot's DM, 2 a group DM / private channel
CHANNEL_TYPE_DM = 1
PONG, CHANNEL_MESSAGE, DEFERRED_CHANNEL_MESSAGE, UPDATE_MESSAGE, AUTOCOMPLETE_RESULT = 1, 4, 5, 7, 8
ACTION_ROW, BUTTON, DANGER_STYLE = 1, 2, 4
CUSTOM_ID_MAX_CHARS = 100
EPHEMERAL = 64
SUBCOMMAND = 1
STRING_OPTION = 3
MAX_CHOICES = 25
CHOICE_NAME_MAX_CHARS = 100
MESSAGE_MAX_CHARS = 2000
NO_MENTIONS: dict[str, list[str]] = {"parse": []}
MAX_JSON_DEPTH = 32  # Discord's payloads nest about 8 deep

# The commands `memorybot register-commands` installs (bulk overwrite).
COMMANDS: list[dict[str, Any]] = [
    {
        "name": "chat",
        "description": "Talk to memorybot",
        "type": 1,
        "options": [
            {"type": STRING_OPTION, "name": "message", "description": "What you want to say", "required": True}
        ],
    },
    {
        "name": "memory",
        "description": "What memorybot remembers about you",
        "type": 1,
        "options": [
            {"type": SUBCOMMAND, "name": "show", "description": "DM me everything you remember about me here"},
            {
                "type": SUBCOMMAND,
                "name": "forget",
                "description": "Forget one of my memories",
                "options": [
                    {
                        "type": STRING_OPTION,
                        "name": "id",
                        "description": "The memory's id",
                        "required": True,
                        "autocomplete": True,
                    }
                ],
            },
            {
                "type": SUBCOMMAND,
                "name": "why",
                "description": "When and from which of my messages you learned a memory",
                "options": [
                    {
                        "type": STRING_OPTION,
                        "name": "id",
                        "description": "The memory's id",
                        "required": True,
                        "autocomplete": True,
                    }
                ],
            },
            {
                "type": SUBCOMMAND,
                "name": "export",
                "description": "DM me a JSON file of all my memories and their history",
            },
            {"type": SUBCOMMAND, "name": "forget-all", "description": "Forget everything you remember about me here"},
        ],
    },
]

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
TEXT_UNSUPPORTED = "Sorry, I don't know that command."
TEXT_EMPTY_CHAT = "Say something after /chat and I'll answer."
TEXT_BUSY = "Sorry, I can't answer right now. Please try again in a moment."
TEXT_ERROR = "Sorry, something went wrong on my side."


class BadRequest(Exception):
    """The body is not an interaction this bot can read (answered with 400)."""


@dataclass(frozen=True)
class Caller:
    user_id: str
    user_name: str
    channel_id: str
    scope: str  # where this conversation's memories live (domain.scope_for)

    @property
    def owner(self) -> Owner:
        return Owner(self.scope, self.user_id)


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Chat:
    interaction_id: str
    token: str
    application_id: str
    caller: Caller
    text: str


@dataclass(frozen=True)
class ShowMemories:
    caller: Caller
    interaction_id: str = ""  # a replay of the same interaction sends no second DM


@dataclass(frozen=True)
class ForgetMemory:
    caller: Caller
    memory_id: str


@dataclass(frozen=True)
class SuggestForget:
    caller: Caller
    typed: str


@dataclass(frozen=True)
class WhyMemory:
    caller: Caller
    memory_id: str


@dataclass(frozen=True)
class ExportMemories:
    caller: Caller
    interaction_id: str


@dataclass(frozen=True)
class ForgetAllAsk:
    caller: Caller


@dataclass(frozen=True)
class ForgetAllConfirm:
    caller: Caller  # who clicked
    requester: str  # who asked (from the button's custom_id)
    asked_at: int  # unix seconds (from the button's custom_id)


@dataclass(frozen=True)
class UnknownComponent:
    """A button click or form submit the bot does not act on: answered politely, nothing changes."""

    custom_id: str


@dataclass(frozen=True)
class Unsupported:
    what: str
    autocomplete: bool = False  # an autocomplete request must be answered with (no) choices


Request = (
    Ping
    | Chat
    | ShowMemories
    | ForgetMemory
    | SuggestForget
    | WhyMemory
    | ExportMemories
    | ForgetAllAsk
    | ForgetAllConfirm
    | UnknownComponent
    | Unsupported
)

# The forget-all button: "memory-forget-all:<requester id>:<unix seconds asked>". Discord sends
# the custom_id of the message the bot posted, so it is the bot's own word on who asked and when.
FORGET_ALL_BUTTON = "memory-forget-all"
FORGET_ALL_TTL = timedelta(minutes=15)
_FORGET_ALL_ID = re.compile(rf"^{FORGET_ALL_BUTTON}:([0-9]{{1,20}}):([0-9]{{1,12}})$")


class Dependencies(Protocol):
    """What answering needs (bootstrap.Container provides it)."""

    # Read-only: the container builds each once (cached properties).
    @property
    def message_store(self) -> MessageStore: ...

    @property
    def memory_store(self) -> MemoryStore: ...

    @property
    def invoker(self) -> AsyncInvoker: ...

    @property
    def discord_interactive(self) -> DiscordApi: ...

    @property
    def scope_mode(self) -> ScopeMode: ...

    def once(self, name: str, key: str, work: Callable[[], dict]) -> dict | None:
        """``work()``'s answer, computed once per key (the dedup ledger); None while another copy runs it."""


# ---------------------------------------------------------------- parsing


def _text(value: Any, what: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"missing {what}")
    return value


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKETS = re.compile(rb"[\[\]{}]")


def _nesting(body: bytes) -> int:
    """How deeply the JSON text nests (outside strings), without parsing it: a deep body is
    refused before the parser's recursion could fail on it."""
    depth = deepest = 0
    for bracket in _JSON_BRACKETS.findall(_JSON_STRING.sub(b"", body if isinstance(body, bytes) else body.encode())):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _snowflake(value: Any, what: str) -> str:
    text = _text(value, what)
    if not is_snowflake(text):  # ASCII digits only, at most 2**64 - 1
        raise BadRequest(f"malformed {what}")
    return text


def _token(value: Any) -> str:
    text = _text(value, "token")
    if not is_interaction_token(text):  # it goes into the webhook URL
        raise BadRequest("malformed token")
    return text


def _caller(payload: dict, scope_mode: ScopeMode) -> Caller:
    member = _object(payload.get("member"))
    user = member.get("user") or payload.get("user")  # guild: member.user; DM: user
    if not isinstance(user, dict):
        raise BadRequest("missing user")
    name = member.get("nick") or user.get("global_name") or user.get("username") or "someone"
    channel = payload.get("channel_id") or _object(payload.get("channel")).get("id")
    channel_id = _snowflake(channel, "channel id")
    guild_id = _snowflake(payload["guild_id"], "guild id") if payload.get("guild_id") is not None else None
    if member and guild_id is None:
        raise BadRequest("guild interaction without a guild id")  # its scope would be unknown
    bot_dm = payload.get("context") == CONTEXT_BOT_DM or _object(payload.get("channel")).get("type") == CHANNEL_TYPE_DM
    scope = scope_for(scope_mode, guild_id=guild_id, channel_id=channel_id, bot_dm=bot_dm)
    return Caller(_snowflake(user.get("id"), "user id"), str(name), channel_id, scope)


def _options(data: dict) -> list[dict]:
    options = data.get("options") or []
    if not isinstance(options, list) or not all(isinstance(o, dict) for o in options):
        raise BadRequest("malformed options")
    return options


def _option(options: list[dict], name: str) -> dict | None:
    return next((o for o in options if o.get("name") == name), None)


def parse(body: bytes, scope_mode: ScopeMode = ScopeMode.GUILD) -> Request:
    if _nesting(body) > MAX_JSON_DEPTH:
        raise BadRequest("JSON nested too deeply")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest("malformed JSON") from None
    if not isinstance(payload, dict):
        raise BadRequest("not an object")
    kind = payload.get("type")
    if isinstance(kind, bool) or not isinstance(kind, int):  # 2.0 and true are not interaction types
        raise BadRequest("unknown interaction type")
    if kind == PING:
        return Ping()
    if kind == MODAL_SUBMIT:
        return _unknown_form(payload)
    if kind not in (APPLICATION_COMMAND, AUTOCOMPLETE, MESSAGE_COMPONENT):
        raise BadRequest("unknown interaction type")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise BadRequest("missing data")
    caller = _caller(payload, scope_mode)
    if kind == MESSAGE_COMPONENT:
        return _component(caller, data)
    command, options = data.get("name"), _options(data)
    if command == "chat" and kind == APPLICATION_COMMAND:
        message = _option(options, "message") or {}  # a missing option is an empty chat
        return Chat(
            _snowflake(payload.get("id"), "interaction id"),
            _token(payload.get("token")),
            _snowflake(payload.get("application_id"), "application id"),
            caller,
            _string_option(message).strip()[:MESSAGE_MAX_CHARS],
        )
    if command == "memory" and options:
        sub = options[0]
        sub_options = _options(sub)
        if sub.get("name") == "show" and kind == APPLICATION_COMMAND:
            return ShowMemories(caller, _snowflake(payload.get("id"), "interaction id"))
        if sub.get("name") in ("forget", "why"):
            typed = _string_option(_option(sub_options, "id") or {})
            if kind == AUTOCOMPLETE:
                return SuggestForget(caller, typed)
            return ForgetMemory(caller, typed) if sub.get("name") == "forget" else WhyMemory(caller, typed)
        if sub.get("name") == "export" and kind == APPLICATION_COMMAND:
            return ExportMemories(caller, _snowflake(payload.get("id"), "interaction id"))
        if sub.get("name") == "forget-all" and kind == APPLICATION_COMMAND:
            return ForgetAllAsk(caller)
    return Unsupported(str(command), autocomplete=kind == AUTOCOMPLETE)


def _unknown_form(payload: dict) -> Request:
    """A modal submit (5): Discord shows "This interaction failed" unless it gets an answer, so
    every well-formed one gets a readable one. The bot shows no forms of its own."""
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        raise BadRequest("component without a custom_id")
    custom_id = data["custom_id"]
    # Components the bot acts on are recognised above this line, by their custom_id.
    # Fallback: anything else (an old message's button, a form from another version).
    return UnknownComponent(custom_id[:100])


def _component(caller: Caller, data: dict) -> Request:
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > CUSTOM_ID_MAX_CHARS:
        raise BadRequest("malformed custom_id")
    match = _FORGET_ALL_ID.match(custom_id)
    if match is None:
        return UnknownComponent(custom_id)
    return ForgetAllConfirm(caller, match[1], int(match[2]))


def forget_all_button(requester: str, asked_at: datetime) -> str:
    return f"{FORGET_ALL_BUTTON}:{requester}:{int(asked_at.timestamp())}"


def _string_option(option: dict) -> str:
    """A string option's value; missing is empty, any other type is not what Discord sends."""
    value = option.get("value")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest("option value is not a string")
    return value


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
    if not found.links:
        return ephemeral(TEXT_WHY_NO_SOURCES.format(memory_id=found.memory_id, verb=verb, at=at))
    return ephemeral(
        TEXT_WHY.format(memory_id=found.memory_id, verb=verb, at=at, links="\n".join(found.links))[:MESSAGE_MAX_CHARS]
    )


EXPORT_FILENAME = "memorybot-export.json"


def _export(request: ExportMemories, deps: Dependencies) -> dict:
    answer = deps.once("export", request.interaction_id, lambda: _export_once(request, deps))
    return answer if answer is not None else ephemeral(TEXT_BUSY)


def _export_once(request: ExportMemories, deps: Dependencies) -> dict:
    data = commands.export(deps.memory_store, request.caller.user_id)
    if not data["scopes"]:
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
    count = len(commands.show(deps.memory_store, caller.owner))
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


def _forget_all_confirm(request: ForgetAllConfirm, deps: Dependencies) -> dict:
    caller = request.caller
    if caller.user_id != request.requester:
        logger.info("forget-all refused: not the requester", extra={"user_id": caller.user_id})
        return ephemeral(TEXT_FORGET_ALL_NOT_YOURS)
    asked = datetime.fromtimestamp(request.asked_at, UTC)
    now = datetime.now(UTC)
    if not asked - timedelta(minutes=1) <= now <= asked + FORGET_ALL_TTL:
        return ephemeral(TEXT_FORGET_ALL_EXPIRED)
    deleted = commands.forget_all(deps.memory_store, caller.owner)
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
    UnknownComponent: _unknown_component,
}
