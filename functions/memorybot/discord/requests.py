"""Discord interaction payloads in, typed requests out: the only module that reads their shape.

``parse`` turns one verified request body into one of the requests below (a ``Caller`` says
who is asking and in which scope their memories live); anything it cannot read is a
``BadRequest``, answered with a 400 before anything is read or written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.record.catalog import COMMAND_DESCRIPTIONS, COMMAND_NAMES, REMEMBER_THIS, SETTING_CHOICES, Language
from ..core.record.terms import Owner, ScopeMode, scope_for
from ..core.rights.server_limits import DAILY_LIMIT_MAX, PERSONA_MAX_CHARS
from ..lazy import lazy
from .formats import is_interaction_token, is_snowflake, valid_unicode

if TYPE_CHECKING:
    from . import history_view, receipts_view
else:  # their buttons' ids only: their own modules load when one of their buttons first comes
    history_view, receipts_view = (lazy(f"memorybot.discord.{name}") for name in ("history_view", "receipts_view"))

# Discord's numbers.
PING, APPLICATION_COMMAND, MESSAGE_COMPONENT, AUTOCOMPLETE, MODAL_SUBMIT = 1, 2, 3, 4, 5
CONTEXT_BOT_DM = 1  # interaction context types: 0 guild, 1 the bot's DM, 2 a group DM / private channel
CHANNEL_TYPE_DM = 1
CUSTOM_ID_MAX_CHARS = 100
SUBCOMMAND = 1
STRING_OPTION = 3
BOOLEAN_OPTION = 5
MESSAGE_MAX_CHARS = 2000
MAX_JSON_DEPTH = 32  # Discord's payloads nest about 8 deep
GUILD_NAME_MAX_CHARS = 100  # Discord's limit on a server's name

CHAT_INPUT, MESSAGE_COMMAND = 1, 3  # application command types (data.type of an interaction)
# Where the commands may be used (Discord's interaction context types) and how the app may be
# installed: in servers, in the bot's DM and, installed by a person, in their own DMs and groups
# (``/memory`` works in the DM, as the README says).
CONTEXTS = [0, 1, 2]
INTEGRATION_TYPES = [0, 1]


def _localized(path: str) -> dict[str, Any]:
    """The description of the command, subcommand or option at ``path``, with its translation."""
    english, others = _in_languages(COMMAND_DESCRIPTIONS[path])
    return {"description": english, "description_localizations": others}


def _in_languages(texts: dict[Language, str]) -> tuple[str, dict[str, str]]:
    """(the English default, {Discord locale: text} for every other language)."""
    return texts[Language.EN], {DISCORD_LOCALES[lang]: t for lang, t in texts.items() if lang is not Language.EN}


# Discord's locale key for each language of the catalog (English is the default text).
DISCORD_LOCALES = {Language.EN: "en-US", Language.JA: "ja"}


def _memory_id_option(subcommand: str) -> dict[str, Any]:
    return {
        "type": STRING_OPTION,
        "name": "id",
        **_localized(f"memory {subcommand} id"),
        "required": True,
        "autocomplete": True,
    }


def _boolean_option(subcommand: str, name: str, *, required: bool) -> dict[str, Any]:
    return {"type": BOOLEAN_OPTION, "name": name, **_localized(f"memory {subcommand} {name}"), "required": required}


def _subcommand(name: str, *options: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": SUBCOMMAND,
        "name": name,
        **_localized(f"memory {name}"),
        **({"options": list(options)} if options else {}),
    }


def _everywhere(command: dict[str, Any]) -> dict[str, Any]:
    return {**command, "contexts": CONTEXTS, "integration_types": INTEGRATION_TYPES}


_REMEMBER_NAME, _REMEMBER_NAMES = _in_languages(COMMAND_NAMES[REMEMBER_THIS])

# The commands `memorybot register-commands` installs (bulk overwrite) and the doctor compares.
COMMANDS: list[dict[str, Any]] = [
    _everywhere(
        {
            "name": "chat",
            "type": CHAT_INPUT,
            **_localized("chat"),
            "options": [
                {
                    "type": STRING_OPTION,
                    "name": "message",
                    **_localized("chat message"),
                    "required": True,
                    "max_length": MESSAGE_MAX_CHARS,  # the longest line the bot keeps
                }
            ],
        }
    ),
    _everywhere(
        {
            "name": "memory",
            "type": CHAT_INPUT,
            **_localized("memory"),
            "options": [
                _subcommand("show"),
                _subcommand("forget", _memory_id_option("forget")),
                _subcommand("why", _memory_id_option("why")),
                _subcommand("export"),
                _subcommand("forget-all", _boolean_option("forget-all", "everywhere", required=False)),
                _subcommand("pause"),
                _subcommand("resume"),
                _subcommand("history"),
                # receipts, "everywhere" memories (core/rights/receipts.py, core/rights/everywhere.py)
                _subcommand("receipts", _boolean_option("receipts", "enabled", required=True)),
                _subcommand("everywhere", _memory_id_option("everywhere")),
                _subcommand("here", _memory_id_option("here")),
            ],
        }
    ),
    # A message command has no description (Discord requires an empty one); its name is localized.
    _everywhere(
        {"name": _REMEMBER_NAME, "type": MESSAGE_COMMAND, "name_localizations": _REMEMBER_NAMES, "description": ""}
    ),
]


class BadRequest(Exception):
    """The body is not an interaction this bot can read (answered with 400)."""


# The requests below are built once by ``parse``, dispatched by their type and dropped: nothing
# assigns to, compares, hashes or prints one (a repr would put a member's words in a log line; a
# changed request is a new one, ``dataclasses.replace``). So they are plain dataclasses without the
# generated ``__eq__``, ``__repr__`` and frozen guards: generating those for some 25 classes was a
# good part of the interactions function's cold import (benchmarks/interactions_bench.py).


@dataclass(eq=False, repr=False)
class Caller:
    """Who is asking, where, and in which language."""

    user_id: str
    user_name: str
    channel_id: str
    scope: str  # where this conversation's memories live (domain.scope_for)
    locale: str = ""  # the person's Discord locale ("ja", "en-US"): the language of every answer
    guild_name: str = ""  # the server's name when the interaction carries it (else read over REST)
    guild_id: str = ""  # the server the interaction came from ("" outside a server): its settings apply

    @property
    def owner(self) -> Owner:
        return Owner(self.scope, self.user_id)


@dataclass(eq=False, repr=False)
class Ping:
    """Discord's check that the endpoint answers."""

    pass


@dataclass(eq=False, repr=False)
class Chat:
    """/chat: a line said to the bot."""

    interaction_id: str
    token: str
    application_id: str
    caller: Caller
    text: str


@dataclass(eq=False, repr=False)
class ShowMemories:
    """/memory show."""

    caller: Caller
    interaction_id: str = ""  # a replay of the same interaction sends no second DM


@dataclass(eq=False, repr=False)
class ForgetMemory:
    """/memory forget."""

    caller: Caller
    memory_id: str


@dataclass(eq=False, repr=False)
class SuggestForget:
    """/memory forget's (and why's) autocomplete."""

    caller: Caller
    typed: str


@dataclass(eq=False, repr=False)
class WhyMemory:
    """/memory why."""

    caller: Caller
    memory_id: str


@dataclass(eq=False, repr=False)
class ExportMemories:
    """/memory export."""

    caller: Caller
    interaction_id: str


@dataclass(eq=False, repr=False)
class ForgetAllAsk:
    """/memory forget-all: the question, with its button."""

    caller: Caller
    everywhere: bool = False  # everywhere:true: the person's "everywhere" memories too


@dataclass(eq=False, repr=False)
class PauseMemory:
    """/memory pause."""

    caller: Caller


@dataclass(eq=False, repr=False)
class ResumeMemory:
    """/memory resume."""

    caller: Caller


@dataclass(eq=False, repr=False)
class ForgetAllConfirm:
    """The forget-all button's click."""

    caller: Caller  # who clicked
    requester: str  # who asked (from the button's custom_id)
    asked_at: int  # unix seconds (from the button's custom_id)
    # The click's own interaction: the deletion job updates the confirmation through its webhook.
    interaction_id: str = ""
    token: str = ""
    application_id: str = ""
    everywhere: bool = False  # asked with everywhere:true (the custom_id's ":e")


@dataclass(eq=False, repr=False)
class ShowHistory:
    """/memory history, or its "Older" button (``requester`` and ``older_than`` from its custom_id)."""

    caller: Caller  # its locale is the answer's language, as for every command
    older_than: str = ""  # a ledger key: the page of changes before it ("" = the newest)
    requester: str = ""  # the button's: whose history it pages ("" for the command itself)


@dataclass(eq=False, repr=False)
class UndoChange:
    """An Undo button of /memory history: ``requester`` and the ledger row ``key`` from its custom_id."""

    caller: Caller  # who clicked
    requester: str
    key: str
    interaction_id: str


@dataclass(eq=False, repr=False)
class SetReceipts:
    """/memory receipts enabled:<bool>."""

    caller: Caller
    enabled: bool


@dataclass(eq=False, repr=False)
class WhyReply:
    """A reply's "Why?" button: whose reply (``requester``) and its interaction, from its custom_id."""

    caller: Caller  # who clicked
    requester: str
    reply_interaction_id: str


@dataclass(eq=False, repr=False)
class MoveMemory:
    """/memory everywhere id:<id> (``everywhere``) or /memory here id:<id>."""

    caller: Caller
    memory_id: str
    everywhere: bool


@dataclass(eq=False, repr=False)
class SuggestEverywhere:
    """Autocomplete for /memory here: the caller's "everywhere" memories."""

    caller: Caller
    typed: str


@dataclass(eq=False, repr=False)
class UnknownComponent:
    """A button click or form submit the bot does not act on: answered politely, nothing changes."""

    custom_id: str
    locale: str = ""


@dataclass(eq=False, repr=False)
class Unsupported:
    """A command or subcommand this bot does not have."""

    what: str
    autocomplete: bool = False  # an autocomplete request must be answered with (no) choices
    locale: str = ""


@dataclass(eq=False, repr=False)
class ShowSettings:
    """/memory-settings show: ``permissions`` are the member's own, as the payload carries them."""

    caller: Caller
    permissions: int


@dataclass(eq=False, repr=False)
class ChangeSetting:
    """/memory-settings <setting> ...: one change, as ``core.rights.servers.SettingChange`` takes it."""

    caller: Caller
    permissions: int
    setting: str
    value: str
    channel: str = ""  # channels: the channel added to the list


@dataclass(eq=False, repr=False)
class TargetMessage:
    """The message "Remember this" was used on, as Discord resolved it."""

    message_id: str
    author_id: str
    content: str


@dataclass(eq=False, repr=False)
class RememberMessage:
    """The "Remember this" message command; ``target`` is None when Discord's resolved data
    was missing or malformed (answered with a polite refusal, nothing read or written)."""

    interaction_id: str
    token: str
    application_id: str
    caller: Caller
    target: TargetMessage | None


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
    | PauseMemory
    | ResumeMemory
    | RememberMessage
    | ShowHistory
    | UndoChange
    | SetReceipts
    | WhyReply
    | MoveMemory
    | SuggestEverywhere
    | UnknownComponent
    | Unsupported
    | ShowSettings
    | ChangeSetting
)

# The forget-all button: "memory-forget-all:<requester id>:<unix seconds asked>". Discord sends
# the custom_id of the message the bot posted, so it is the bot's own word on who asked and when.
FORGET_ALL_BUTTON = "memory-forget-all"
FORGET_ALL_TTL = timedelta(minutes=15)
_FORGET_ALL_ID = re.compile(rf"^{FORGET_ALL_BUTTON}:([0-9]{{1,20}}):([0-9]{{1,12}})(:e)?$")


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
    guild_name = _object(payload.get("guild")).get("name")
    return Caller(
        _snowflake(user.get("id"), "user id"),
        valid_unicode(str(name)),
        channel_id,
        scope,
        _locale(payload.get("locale")),
        valid_unicode(guild_name)[:GUILD_NAME_MAX_CHARS] if isinstance(guild_name, str) else "",
        guild_id or "",
    )


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
    by_type = _BY_TYPE.get(kind)
    if by_type is None:
        raise BadRequest("unknown interaction type")
    return by_type(payload, scope_mode)


@dataclass(eq=False, repr=False)
class _Command:
    """A slash command or its autocomplete, read as far as every command needs."""

    payload: dict
    kind: int  # APPLICATION_COMMAND or AUTOCOMPLETE
    caller: Caller
    options: list[dict]  # the command's options; for a subcommand, the subcommand's own


def _data(payload: dict) -> dict:
    data = payload.get("data")
    if not isinstance(data, dict):
        raise BadRequest("missing data")
    return data


def _command(payload: dict, scope_mode: ScopeMode) -> Request:
    data = _data(payload)
    caller = _caller(payload, scope_mode)
    name, kind = data.get("name"), payload["type"]
    command = _Command(payload, kind, caller, _options(data))
    handler = _COMMANDS.get((name, kind)) if isinstance(name, str) else None
    request = handler(command) if handler is not None else None
    if request is None:
        return Unsupported(str(name), autocomplete=kind == AUTOCOMPLETE, locale=caller.locale)
    return request


def _memory(command: _Command) -> Request | None:
    """/memory <subcommand>: None (unsupported) for a subcommand this bot does not have."""
    if not command.options:
        return None
    sub = command.options[0]
    sub_command = replace(command, options=_options(sub))
    name = sub.get("name")
    handler = _MEMORY_SUBCOMMANDS.get((name, command.kind)) if isinstance(name, str) else None
    return handler(sub_command) if handler is not None else None


def _chat(command: _Command) -> Request:
    message = _option(command.options, "message") or {}  # a missing option is an empty chat
    return Chat(
        _interaction_id(command),
        _token(command.payload.get("token")),
        _snowflake(command.payload.get("application_id"), "application id"),
        command.caller,
        _string_option(message).strip()[:MESSAGE_MAX_CHARS],
    )


def _remember(command: _Command) -> Request:
    """ "Remember this" on a message: the message as Discord resolved it (``data.target_id``,
    ``data.resolved.messages``); anything missing or malformed there is no target."""
    data = _data(command.payload)
    if data.get("type") != MESSAGE_COMMAND:
        return Unsupported(REMEMBER_THIS, locale=command.caller.locale)
    return RememberMessage(
        _interaction_id(command),
        _token(command.payload.get("token")),
        _snowflake(command.payload.get("application_id"), "application id"),
        command.caller,
        _target(data),
    )


def _target(data: dict) -> TargetMessage | None:
    target_id = data.get("target_id")
    if not isinstance(target_id, str) or not is_snowflake(target_id):
        return None
    message = _object(_object(_object(data.get("resolved")).get("messages")).get(target_id))
    author = _object(message.get("author"))
    content = message.get("content")
    if message.get("id") != target_id or not is_snowflake(author.get("id")):
        return None
    if not isinstance(content, str):
        return None
    # A bot's or a webhook's message is nobody's own words, whoever points at it.
    author_id = "" if author.get("bot") or message.get("webhook_id") else author["id"]
    return TargetMessage(target_id, author_id, valid_unicode(content)[:MESSAGE_MAX_CHARS])


def _interaction_id(command: _Command) -> str:
    return _snowflake(command.payload.get("id"), "interaction id")


def _memory_id(command: _Command) -> str:
    return _string_option(_option(command.options, "id") or {})


def _component_interaction(payload: dict, scope_mode: ScopeMode) -> Request:
    data = _data(payload)
    caller = _caller(payload, scope_mode)
    custom_id = data.get("custom_id")
    history = _history_component(payload, caller, custom_id) if isinstance(custom_id, str) else None
    return history if history is not None else _component(payload, caller, data)


def _history_component(payload: dict, caller: Caller, custom_id: str) -> Request | None:
    """The history page's buttons (None: not one of them)."""
    if match := history_view.UNDO_ID.match(custom_id):
        return UndoChange(caller, match[1], match[2], _snowflake(payload.get("id"), "interaction id"))
    if match := history_view.HISTORY_ID.match(custom_id):
        return ShowHistory(caller, older_than=match[2], requester=match[1])
    if match := receipts_view.BECAUSE_ID.match(custom_id):
        return WhyReply(caller, match[1], match[2])
    if match := receipts_view.OVERNIGHT_ID.match(custom_id):  # the night's line: the history, afresh
        return ShowHistory(caller, requester=match[1])
    return None


def _unknown_form(payload: dict) -> Request:
    """A modal submit (5): Discord shows "This interaction failed" unless it gets an answer, so
    every well-formed one gets a readable one. The bot shows no forms of its own."""
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        raise BadRequest("component without a custom_id")
    custom_id = valid_unicode(data["custom_id"])
    # Components the bot acts on are recognised above this line, by their custom_id.
    # Fallback: anything else (an old message's button, a form from another version).
    return UnknownComponent(custom_id[:100], _locale(payload.get("locale")))


def _component(payload: dict, caller: Caller, data: dict) -> Request:
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > CUSTOM_ID_MAX_CHARS:
        raise BadRequest("malformed custom_id")
    match = _FORGET_ALL_ID.match(custom_id)
    if match is None:
        return UnknownComponent(valid_unicode(custom_id), caller.locale)  # logged: keep it encodable
    return ForgetAllConfirm(
        caller,
        match[1],
        int(match[2]),
        _snowflake(payload.get("id"), "interaction id"),
        _token(payload.get("token")),
        _snowflake(payload.get("application_id"), "application id"),
        everywhere=match[3] is not None,
    )


def forget_all_button(requester: str, asked_at: datetime, everywhere: bool = False) -> str:
    return f"{FORGET_ALL_BUTTON}:{requester}:{int(asked_at.timestamp())}{':e' if everywhere else ''}"


_LOCALE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$")


def _locale(value: Any) -> str:
    """Discord's ``locale`` ("ja", "en-US", "zh-TW"); anything else is no locale (English)."""
    return value if isinstance(value, str) and _LOCALE.match(value) else ""


def _boolean(command: _Command, name: str, *, default: bool = False) -> bool:
    """A boolean option's value (missing: ``default``); any other type is not what Discord sends."""
    value = (_option(command.options, name) or {}).get("value")
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest("option value is not a boolean")
    return value


def _string_option(option: dict) -> str:
    """A string option's value; missing is empty, any other type is not what Discord sends."""
    value = option.get("value")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest("option value is not a string")
    return valid_unicode(value)


# What each interaction type is read as (anything else is refused); pings and forms need no caller.
_BY_TYPE: dict[int, Callable[[dict, ScopeMode], Request]] = {
    PING: lambda _payload, _scope_mode: Ping(),
    MODAL_SUBMIT: lambda payload, _scope_mode: _unknown_form(payload),
    APPLICATION_COMMAND: _command,
    AUTOCOMPLETE: _command,
    MESSAGE_COMPONENT: _component_interaction,
}
# (command name, interaction type) -> its request; a pair not here is Unsupported.
_COMMANDS: dict[tuple[str, int], Callable[[_Command], Request | None]] = {
    ("chat", APPLICATION_COMMAND): _chat,
    ("memory", APPLICATION_COMMAND): _memory,
    ("memory", AUTOCOMPLETE): _memory,
    (REMEMBER_THIS, APPLICATION_COMMAND): _remember,
}
_MEMORY_SUBCOMMANDS: dict[tuple[str, int], Callable[[_Command], Request]] = {
    ("show", APPLICATION_COMMAND): lambda c: ShowMemories(c.caller, _interaction_id(c)),
    ("forget", APPLICATION_COMMAND): lambda c: ForgetMemory(c.caller, _memory_id(c)),
    ("forget", AUTOCOMPLETE): lambda c: SuggestForget(c.caller, _memory_id(c)),
    ("why", APPLICATION_COMMAND): lambda c: WhyMemory(c.caller, _memory_id(c)),
    ("why", AUTOCOMPLETE): lambda c: SuggestForget(c.caller, _memory_id(c)),
    ("export", APPLICATION_COMMAND): lambda c: ExportMemories(c.caller, _interaction_id(c)),
    ("forget-all", APPLICATION_COMMAND): lambda c: ForgetAllAsk(c.caller, _boolean(c, "everywhere")),
    ("pause", APPLICATION_COMMAND): lambda c: PauseMemory(c.caller),
    ("resume", APPLICATION_COMMAND): lambda c: ResumeMemory(c.caller),
    ("history", APPLICATION_COMMAND): lambda c: ShowHistory(c.caller),
    # receipts and "everywhere" memories
    ("receipts", APPLICATION_COMMAND): lambda c: SetReceipts(c.caller, _boolean(c, "enabled", default=True)),
    ("everywhere", APPLICATION_COMMAND): lambda c: MoveMemory(c.caller, _memory_id(c), everywhere=True),
    ("everywhere", AUTOCOMPLETE): lambda c: SuggestForget(c.caller, _memory_id(c)),
    ("here", APPLICATION_COMMAND): lambda c: MoveMemory(c.caller, _memory_id(c), everywhere=False),
    ("here", AUTOCOMPLETE): lambda c: SuggestEverywhere(c.caller, _memory_id(c)),
}


# ---- /memory-settings: a server's admins (core/rights/servers.py). Registered with Manage Server as its
# default permission and in servers only; the handler checks the member's own permissions too.
SETTINGS_COMMAND_NAME = "memory-settings"
SUBCOMMAND_GROUP, INTEGER_OPTION, BOOLEAN_OPTION, CHANNEL_OPTION = 2, 4, 5, 7
MANAGE_GUILD_PERMISSION = "32"
GUILD_CONTEXT = [0]
TEXT_CHANNEL_TYPES = [0, 5]  # text and announcement channels


def _settings_option(path: str, kind: int, name: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "name": name, **_localized(f"{SETTINGS_COMMAND_NAME} {path} {name}"), **more}


def _settings_sub(path: str, *options: dict[str, Any], kind: int = SUBCOMMAND) -> dict[str, Any]:
    return {
        "type": kind,
        "name": path.split()[-1],
        **_localized(f"{SETTINGS_COMMAND_NAME} {path}"),
        **({"options": list(options)} if options else {}),
    }


def _value_choices(*values: str) -> list[dict[str, Any]]:
    choices = []
    for value in values:
        name, others = _in_languages(SETTING_CHOICES[value])
        choices.append({"name": name, "name_localizations": others, "value": value})
    return choices


SETTINGS_COMMAND: dict[str, Any] = {
    "name": SETTINGS_COMMAND_NAME,
    "type": CHAT_INPUT,
    **_localized(SETTINGS_COMMAND_NAME),
    "default_member_permissions": MANAGE_GUILD_PERMISSION,
    "contexts": GUILD_CONTEXT,
    "integration_types": [0],
    "options": [
        _settings_sub("show"),
        _settings_sub("memory", _settings_option("memory", BOOLEAN_OPTION, "enabled", required=True)),
        _settings_sub(
            "channels",
            _settings_option(
                "channels", STRING_OPTION, "mode", required=True, choices=_value_choices("all", "only", "except")
            ),
            _settings_option("channels", CHANNEL_OPTION, "channel", channel_types=TEXT_CHANNEL_TYPES),
        ),
        _settings_sub("persona", _settings_option("persona", STRING_OPTION, "text", max_length=PERSONA_MAX_CHARS)),
        _settings_sub(
            "diary",
            _settings_sub(
                "diary channel",
                _settings_option(
                    "diary channel", CHANNEL_OPTION, "channel", required=True, channel_types=TEXT_CHANNEL_TYPES
                ),
            ),
            _settings_sub("diary off"),
            _settings_sub(
                "diary language",
                _settings_option(
                    "diary language", STRING_OPTION, "value", required=True, choices=_value_choices("ja", "en")
                ),
            ),
            kind=SUBCOMMAND_GROUP,
        ),
        _settings_sub(
            "daily-limit",
            _settings_option(
                "daily-limit", INTEGER_OPTION, "turns", required=True, min_value=0, max_value=DAILY_LIMIT_MAX
            ),
        ),
        _settings_sub(
            "language",
            _settings_option(
                "language", STRING_OPTION, "value", required=True, choices=_value_choices("auto", "en", "ja")
            ),
        ),
    ],
}
COMMANDS.append(SETTINGS_COMMAND)


def _permissions(payload: dict) -> int:
    """The member's own permissions in the channel (a decimal string); none outside a server or unreadable."""
    value = _object(payload.get("member")).get("permissions")
    return int(value) if isinstance(value, str) and value.isdigit() and len(value) <= 40 else 0


def _option_value(options: list[dict], name: str, kind: type) -> Any:
    value = (_option(options, name) or {}).get("value")
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"option {name} has the wrong type")
    return value


_Change = tuple[str, str, str]  # (setting, value, channel): core.rights.servers.SettingChange's fields


def _settings_change(name: str, options: list[dict]) -> _Change | None:
    """The change a subcommand asks for; None for a subcommand this bot does not have."""
    if name == "memory":
        enabled = _option_value(options, "enabled", bool)
        return ("memory", "true" if enabled is not False else "false", "")
    if name == "channels":
        channel = _option_value(options, "channel", str)
        if channel is not None and not is_snowflake(channel):
            raise BadRequest("malformed channel id")
        return ("channels", _option_value(options, "mode", str) or "", channel or "")
    if name == "persona":
        return ("persona", valid_unicode(_option_value(options, "text", str) or ""), "")
    if name == "daily-limit":
        turns = _option_value(options, "turns", int)
        return ("daily-limit", str(turns) if turns is not None and turns >= 0 else "-", "")
    if name == "language":
        return ("language", _option_value(options, "value", str) or "", "")
    return None


def _diary_change(options: list[dict]) -> _Change | None:
    """/memory-settings diary channel|off|language."""
    if not options:
        return None
    sub = options[0]
    name, inner = sub.get("name"), _options(sub)
    if name == "channel":
        channel = _option_value(inner, "channel", str)
        if channel is None or not is_snowflake(channel):
            raise BadRequest("malformed channel id")
        return ("diary", channel, "")
    if name == "off":
        return ("diary", "", "")
    if name == "language":
        return ("diary-language", _option_value(inner, "value", str) or "", "")
    return None


def _settings_request(command: _Command) -> Request | None:
    if not command.options:
        return None
    sub = command.options[0]
    name, options = sub.get("name"), _options(sub)
    permissions = _permissions(command.payload)
    if name == "show":
        return ShowSettings(command.caller, permissions)
    change = _diary_change(options) if name == "diary" else _settings_change(str(name), options)
    return ChangeSetting(command.caller, permissions, *change) if change is not None else None


_COMMANDS[(SETTINGS_COMMAND_NAME, APPLICATION_COMMAND)] = _settings_request
