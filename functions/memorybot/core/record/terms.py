"""The domain's terms that every answer uses: the design's numbers, actors and actions, scopes and
owners, ids and times, the channel log's messages and the rules for a text. Plain values, no I/O.

``domain`` names these too (``domain.X`` is the whole domain) and adds the memories and what decides
them; the interactions function's front door imports this module alone, so that a cold start
builds none of the memories' classes (benchmarks/interactions_bench.py).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum

JST = timezone(timedelta(hours=9), "JST")
DISCORD_EPOCH_MS = 1420070400000

# The design's numbers, each named once.
EXCHANGE_MESSAGES = 6  # messages rendered for one extraction
PROFILE_LIMIT = 10  # memories read by extraction, the reply prompt and show
WORTH_THRESHOLD = 0.5  # below: the run ends with no reads and no writes
ADD_THRESHOLD = 0.5
SHOW_PREVIEW_CHARS = 80
MEMORY_TEXT_MAX_CHARS = 500  # a memory is a short fact, not a transcript
# "Remember this" claims the message before its job runs; a claim its job never settled (the job
# lost for good) lapses after this, longer than the extraction function's attempts take.
REMEMBER_CLAIM_LEASE = timedelta(minutes=30)
# A nightly function runs at most 15 minutes (Lambda's limit): a run nobody has finished
# by then has lost its worker.
NIGHTLY_MAX_DURATION = timedelta(minutes=15)
# Deployed, the run is a Step Functions execution: its claim is held for the execution's whole
# timeout (a second start for the day does nothing; a failed execution is redriven, not retaken).
NIGHTLY_EXECUTION_TIMEOUT = timedelta(hours=6)


class Actor(str, Enum):
    REPLY = "reply"
    COMMAND = "command"
    EXTRACTION = "extraction"
    NIGHTLY = "nightly"
    OPERATOR = "operator"  # an erasure by the operator (POST /memory/erase)
    IMPORT = "import"  # memories moved in by the operator (POST /memory/import)


class Action(str, Enum):
    READ = "read"
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    ROLLBACK = "rollback"
    ERASE = "erase"  # the erasure's own row: counts only
    PAUSE = "pause"  # /memory pause: the person's own row (no memory changes)
    RESUME = "resume"  # /memory resume
    UNDO = "undo"  # the person's Undo of one change in /memory history (actor command)
    MOVE = "move"  # /memory everywhere or here: one memory moved between a scope and the person's own


# The ledger actions that changed a memory (each row holds its before / after state): what
# ``/memory history`` lists, and what its Undo can reverse.
CHANGE_ACTIONS: tuple[Action, ...] = (
    Action.ADD,
    Action.UPDATE,
    Action.DELETE,
    Action.ROLLBACK,
    Action.UNDO,
    Action.MOVE,
)


# ---- scopes: what is learned in one server (or DM) is read, shown and forgotten there only

GLOBAL_SCOPE = "global"  # the operator chose one scope for everything (the design's single server)
DM_SCOPE = "dm"  # a person's direct messages with the bot
# The person's own scope: the memories they chose to have read in every server and DM, beside each
# scope's own (``/memory everywhere``). Never a place a conversation happens in: nothing is learned
# into it, only moved there by the person.
EVERYWHERE_SCOPE = "everywhere"


class ScopeMode(str, Enum):
    GUILD = "guild"  # default: one scope per server, one for the bot DM, one per group DM
    GLOBAL = "global"


def scope_for(mode: ScopeMode, *, guild_id: str | None, channel_id: str, bot_dm: bool) -> str:
    """The scope a conversation's memories live in."""
    if mode is ScopeMode.GLOBAL:
        return GLOBAL_SCOPE
    if guild_id:
        return f"guild:{guild_id}"
    if bot_dm:
        return DM_SCOPE
    return f"channel:{channel_id}"  # a group DM (user-installed app): never mixed with a private DM


@dataclass(frozen=True)
class Owner:
    """Whose profile: one person within one scope. Every memory read and write is keyed by it."""

    scope: str
    user_id: str

    @property
    def key(self) -> str:
        return f"{self.scope}#{self.user_id}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(at: datetime) -> str:
    """Fixed-width UTC ISO 8601 (a four-digit year, microseconds, 'Z'), so stored times sort as
    text and read back. (``strftime("%Y")`` writes the year 999 as "999" on Linux.)"""
    at = at.astimezone(UTC)
    return f"{at.year:04d}-" + at.strftime("%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


MAX_SNOWFLAKE = 2**64 - 1  # snowflakes are unsigned 64-bit integers
_SNOWFLAKE = re.compile(r"[0-9]{1,20}", re.ASCII)


def is_snowflake(text: object) -> bool:
    """A Discord id as text: ASCII digits only (it may end up in a URL path), at most 64 bits."""
    return isinstance(text, str) and _SNOWFLAKE.fullmatch(text) is not None and int(text) <= MAX_SNOWFLAKE


def snowflake_time(snowflake: str | int) -> datetime:
    """The creation time Discord encodes in every snowflake id."""
    ms = (int(snowflake) >> 22) + DISCORD_EPOCH_MS
    return datetime.fromtimestamp(ms / 1000, UTC)


def snowflake_at(at: datetime, sequence: int = 0) -> str:
    """A snowflake for a given time (used for ids the bot makes up itself)."""
    ms = int(at.timestamp() * 1000) - DISCORD_EPOCH_MS
    return str((ms << 22) | (sequence & 0x3FFFFF))


def jst_day(at: datetime) -> str:
    return at.astimezone(JST).strftime("%Y-%m-%d")


# Memory ids are typed by people in a slash command: short, no look-alike characters.
MEMORY_ID_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"
MEMORY_ID_LENGTH = 5


def new_memory_id() -> str:
    import secrets  # here, not at the top: the interactions function's cold start needs it for no answer

    return "".join(secrets.choice(MEMORY_ID_ALPHABET) for _ in range(MEMORY_ID_LENGTH))


def is_memory_id(text: str) -> bool:
    return len(text) == MEMORY_ID_LENGTH and all(c in MEMORY_ID_ALPHABET for c in text)


@dataclass(frozen=True)
class Message:
    """One line of the channel log. Its time is the time in its snowflake.

    ``conversation_of`` is the person whose conversation with the bot this line belongs to:
    their ``/chat`` message, or the bot's reply to it. Empty for everything else (other
    people's ordinary messages fetched as channel history): such lines are context for
    replies and the diary, and never decide anyone's memories.
    """

    channel_id: str
    message_id: str
    author_id: str
    author_name: str
    content: str
    is_bot: bool = False
    scope: str = GLOBAL_SCOPE
    conversation_of: str = ""

    @property
    def created_at(self) -> datetime:
        return snowflake_time(self.message_id)


BOT_NAME = "memorybot"
DISPLAY_NAME_MAX_CHARS = 40


def _plain_name(name: str, *, fallback: str) -> str:
    """A display name on one line, without the characters that could fake a speaker marker,
    and never the bot's own name (a nickname of "memorybot" must not look like the bot)."""
    cleaned = "".join(ch for ch in name if ch.isprintable() and ch not in ':<>[]"\\`')
    cleaned = " ".join(cleaned.split())[:DISPLAY_NAME_MAX_CHARS]
    if not cleaned or cleaned.casefold() in (BOT_NAME, "bot"):
        return fallback
    return cleaned


def one_line(text: str) -> str:
    return " ".join(text.split())


_ALLOWED_CONTROLS = frozenset("\n\t")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a memory's text (None: it can): it must be valid Unicode (no lone
    surrogate, which no store can encode), hold no control character other than newline and tab
    (an ANSI escape sequence starts with one), and show something (not only spaces or
    zero-width characters). The answer names the character's code point, never the text."""
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cs":
            return f"is not valid Unicode (a lone surrogate U+{ord(ch):04X})"
        if category == "Cc" and ch not in _ALLOWED_CONTROLS:
            return f"holds the control character U+{ord(ch):04X}; only newline and tab are allowed"
    if not text.strip():
        return "is empty"
    if shows_nothing(text):
        return "has no visible characters"
    return None


def shows_nothing(text: str) -> bool:
    """Nothing a reader would see: empty, or only spaces, zero-width and other invisible characters
    (Unicode's separators and "other" categories). The one rule for a memory's text (the import)
    and for a message to learn from ("Remember this", an exchange's lines)."""
    return not any(unicodedata.category(ch)[0] not in "CZ" for ch in text)


def plain_name(name: str, user_id: str) -> str:
    return _plain_name(name, fallback=f"user {user_id}")
