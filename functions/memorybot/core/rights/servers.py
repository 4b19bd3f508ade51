"""A server's own settings, changed by its admins from Discord (/memory-settings), and the
server's figures, kept as turns and nights happen.

The settings steer the bot in one server only: memory on or off (a server-wide pause), the
channels where /chat answers and learns, the community's persona for the reply, the server's
own nightly diary, a daily limit per member and the answers' language. Each change is one
ledger row (actor ``admin``, the admin's id, before -> after) written in the same transaction
as the change (``ServerStore.change``).

The figures are counters (turns, model requests, memories, people): nothing here ever reads a
member's memories, and ``show`` names no member.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from enum import Enum
from typing import Protocol, TypeVar

from ..record.terms import Message
from .server_limits import DAILY_LIMIT_MAX, MAX_CHANNELS, PERSONA_MAX_CHARS

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=Message)

ADMIN_ACTOR = "admin"  # the ledger's actor for a settings change
FIGURE_DAYS = 30  # show's "over 30 days"
# Discord's permission bits an admin needs (either): Manage Server, Administrator.
MANAGE_GUILD = 1 << 5
ADMINISTRATOR = 1 << 3


class ChannelMode(str, Enum):
    ALL = "all"
    ONLY = "only"
    EXCEPT = "except"


class AnswerLanguage(str, Enum):
    AUTO = "auto"  # each member's Discord locale
    EN = "en"
    JA = "ja"


# The names a change and its ledger row carry, one per setting.
MEMORY, CHANNELS, PERSONA, DIARY, DIARY_LANGUAGE, DAILY_LIMIT, LANGUAGE = (
    "memory",
    "channels",
    "persona",
    "diary",
    "diary-language",
    "daily-limit",
    "language",
)
SETTING_NAMES = (MEMORY, CHANNELS, PERSONA, DIARY, DIARY_LANGUAGE, DAILY_LIMIT, LANGUAGE)


@dataclass(frozen=True)
class Changed:
    """Who changed a setting last, and when."""

    admin_id: str
    at: datetime


@dataclass(frozen=True)
class ServerSettings:
    """One server's settings; the defaults are the bot as it behaves without any."""

    guild_id: str
    memory_enabled: bool = True
    memory_since: datetime | None = None  # turned on again at: nothing said before it is learned
    channel_mode: ChannelMode = ChannelMode.ALL
    channels: tuple[str, ...] = ()
    persona: str = ""
    diary_channel: str = ""
    diary_language: str = ""  # "" = the deployment's (MEMORYBOT_DIARY_LANGUAGE)
    diary_error: int = 0  # Discord's code when the last post failed (50001, 50013): posting stopped
    daily_limit: int = 0  # /chat turns per member per day; 0 = none
    language: AnswerLanguage = AnswerLanguage.AUTO
    changed: Mapping[str, Changed] = field(default_factory=dict)
    version: int = 0  # each change adds one (the store's optimistic check)

    def allows_channel(self, channel_id: str) -> bool:
        if self.channel_mode is ChannelMode.ONLY:
            return channel_id in self.channels
        if self.channel_mode is ChannelMode.EXCEPT:
            return channel_id not in self.channels
        return True

    def answer_locale(self, locale: str) -> str:
        """The locale the bot answers in here: the member's own unless the admins chose one."""
        return locale if self.language is AnswerLanguage.AUTO else self.language.value

    def learnable(self, said_at: datetime) -> bool:
        """May a line said at ``said_at`` here be learned from? Not while memory is off, nor
        anything said before it was turned on again."""
        return self.memory_enabled and (self.memory_since is None or said_at >= self.memory_since)

    @property
    def posts_diary(self) -> bool:
        return bool(self.diary_channel) and not self.diary_error and self.memory_enabled


@dataclass(frozen=True)
class SettingChange:
    """One change an admin asked for: the setting's name and its new value, as text."""

    setting: str
    value: str
    channel: str = ""  # channels: the channel added to the list (mode only/except)


class BadSetting(ValueError):
    """A change that does not fit its setting (answered politely, nothing changes)."""


def apply(current: ServerSettings, change: SettingChange, now: datetime) -> ServerSettings:
    """The settings after ``change``; ``BadSetting`` for a value that does not fit."""
    setting, value = change.setting, change.value
    if setting == MEMORY:
        enabled = value == "true"
        since = now if enabled and not current.memory_enabled else current.memory_since
        return replace(current, memory_enabled=enabled, memory_since=since)
    if setting == CHANNELS:
        mode = _enum(ChannelMode, value)
        if mode is ChannelMode.ALL:
            return replace(current, channel_mode=mode, channels=())
        if not change.channel:
            raise BadSetting("channel")
        kept = current.channels if current.channel_mode is mode else ()
        channels = tuple(dict.fromkeys((*kept, change.channel)))
        if len(channels) > MAX_CHANNELS:
            raise BadSetting("channels")
        return replace(current, channel_mode=mode, channels=channels)
    if setting == PERSONA:
        if len(value) > PERSONA_MAX_CHARS:
            raise BadSetting("persona")
        return replace(current, persona=value.strip())
    if setting == DIARY:  # a channel id, or "" for off; a new channel clears a past error
        return replace(current, diary_channel=value, diary_error=0)
    if setting == DIARY_LANGUAGE:
        if value not in ("en", "ja"):
            raise BadSetting("diary-language")
        return replace(current, diary_language=value)
    if setting == DAILY_LIMIT:
        if not value.isdigit() or int(value) > DAILY_LIMIT_MAX:
            raise BadSetting("daily-limit")
        return replace(current, daily_limit=int(value))
    if setting == LANGUAGE:
        return replace(current, language=_enum(AnswerLanguage, value))
    raise BadSetting(setting)


E = TypeVar("E", ChannelMode, AnswerLanguage)


def _enum(kind: type[E], value: str) -> E:
    try:
        return kind(value)
    except ValueError:
        raise BadSetting(value) from None


def described(settings: ServerSettings, setting: str) -> str:
    """One setting's value as the ledger row's before/after (plain text, no member's words but the
    admins' own persona)."""
    if setting == MEMORY:
        return "on" if settings.memory_enabled else "off"
    if setting == CHANNELS:
        return settings.channel_mode.value + "".join(f" {c}" for c in settings.channels)
    if setting == PERSONA:
        return settings.persona
    if setting == DIARY:
        return settings.diary_channel or "off"
    if setting == DIARY_LANGUAGE:
        return settings.diary_language or "default"
    if setting == DAILY_LIMIT:
        return str(settings.daily_limit)
    if setting == LANGUAGE:
        return settings.language.value
    raise BadSetting(setting)


@dataclass(frozen=True)
class ChangeRow:
    """A settings change's ledger row."""

    guild_id: str
    setting: str
    admin_id: str
    before: str
    after: str
    at: datetime
    actor: str = ADMIN_ACTOR


@dataclass(frozen=True)
class DayFigures:
    day: date
    turns: int = 0
    model_requests: int = 0


@dataclass(frozen=True)
class Figures:
    """What show tells an admin about use: counts only."""

    people: int
    memories: int
    days: Sequence[DayFigures]  # the last FIGURE_DAYS days that had any use, newest last


class Refused(Enum):
    """Why a turn was not taken (the member is told so, only them)."""

    DAILY_LIMIT = "daily_limit"


class ServerStore(Protocol):
    """Where a server's settings, their ledger and its figures live (adapters/dynamodb_servers.py)."""

    def get(self, guild_id: str) -> ServerSettings:
        """The server's settings (defaults when none were set); cached briefly in a warm process."""

    def get_many(self, guild_ids: Sequence[str]) -> dict[str, ServerSettings]:
        """Several servers' settings at once (the nightly run)."""

    def change(self, before: ServerSettings, after: ServerSettings, row: ChangeRow) -> bool:
        """Write ``after`` with its ledger row in one transaction, only if the stored settings are
        still ``before`` (its version); False when another change came first."""

    def changes(self, guild_id: str, limit: int) -> list[ChangeRow]:
        """The newest settings changes, newest first."""

    def take_turn(self, guild_id: str, user_id: str, day: date, limit: int) -> Refused | None:
        """Count one /chat turn of a member (the server's day counter and, with a limit, the
        member's own); refused, counting nothing, when the member is at the limit."""

    def count(self, guild_id: str, day: date, *, model_requests: int = 0, memories: int = 0) -> None:
        """Add model requests (today's counter) and learned (+) or forgotten (-) memories."""

    def count_person(self, guild_id: str, user_id: str, *, has_memories: bool) -> None:
        """A person now has memories here (or none any more, after a forget-all)."""

    def figures(self, guild_id: str, today: date) -> Figures: ...

    def diary_failed(self, guild_id: str, code: int) -> None:
        """Discord refused the diary's post (50001, 50013): posting stops until the channel is set again."""


def person_key(guild_id: str, user_id: str) -> str:
    """What the people counter keeps of a person: a digest, never the id itself."""
    return hashlib.sha256(f"{guild_id}:{user_id}".encode()).hexdigest()[:16]


def figure_days(today: date) -> tuple[date, date]:
    """The first and last day of show's 30 days."""
    return today - timedelta(days=FIGURE_DAYS - 1), today


def guild_of(scope: str) -> str:
    """The server of a per-server scope ("guild:<id>"); "" for any other scope."""
    kind, _, ident = scope.partition(":")
    return ident if kind == "guild" else ""


def is_admin(permissions: int) -> bool:
    return bool(permissions & (MANAGE_GUILD | ADMINISTRATOR))


# ---- the workers' side: the settings a job runs under, and the counters kept as it runs


def count_quietly(
    store: ServerStore, guild_id: str, day: date, *, model_requests: int = 0, memories: int = 0, person: str = ""
) -> None:
    """Add to a server's figures; a counter that could not be written never fails the work it counts."""
    if not guild_id or not (model_requests or memories or person):
        return
    try:
        store.count(guild_id, day, model_requests=model_requests, memories=memories)
        if person:
            store.count_person(guild_id, person, has_memories=True)
    except Exception as exc:  # noqa: BLE001 - figures are a courtesy; the turn stands
        logger.warning("server figures not counted", extra={"error": type(exc).__name__})


def learnable_lines(settings: ServerSettings | None, messages: Sequence[M]) -> list[M]:
    """The lines a server's settings let be learned from: none while memory is off there, none said
    before it was turned on again."""
    if settings is None:
        return list(messages)
    return [m for m in messages if settings.learnable(m.created_at)]
