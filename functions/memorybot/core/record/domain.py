"""The memory domain: plain dataclasses, no I/O. The design's numbers, actors and actions, scopes and
owners, memories, messages and exchanges, ids and times; the person's record is ``person``, a change
and the ledger's rows ``changes``.

Times are timezone-aware UTC datetimes in the domain; adapters store them as
fixed-width ISO 8601 strings (see ``iso``) so that they sort as text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from enum import Enum

from .dates import day_ends

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


class Verdict(str, Enum):
    KEEP = "keep"
    UPDATE = "update"
    DELETE = "delete"


# What each question may answer, defined once (the decision parsing and every prompt use them).
MEMORY_VERDICTS: tuple[Verdict, ...] = (Verdict.KEEP, Verdict.UPDATE, Verdict.DELETE)
REVIEW_VERDICTS: tuple[Verdict, ...] = (Verdict.KEEP, Verdict.DELETE)  # the stale review: never a rewrite


@dataclass(frozen=True)
class Decision:
    """Jev's one answer on an exchange: a verdict for each memory it was shown, and the probability
    that the exchange holds a new fact none of them covers (the add).

    Values are as answered: the core checks each verdict and the add on its own
    (``decisions.py``), so one unusable field is that record's failure alone. An id missing from
    ``verdicts`` is a memory left untouched; ``add`` None: no add.
    """

    verdicts: Mapping[str, object]  # memory id -> the verdict given for it
    add: object = None  # the add's probability as answered; None when not asked or not given
    requests: int = 1  # model requests it took (per-record questions: one a memory, and the add)


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


@dataclass(frozen=True)
class Speaker:
    """The person a decision is about: their id, and their display name (user-controlled, never trusted)."""

    user_id: str
    name: str


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
class SourceRef:
    """Where one of the person's own messages is: enough to link to it, never its text."""

    channel_id: str
    message_id: str

    def encode(self) -> str:
        return f"{self.channel_id}/{self.message_id}"

    @classmethod
    def decode(cls, text: str) -> SourceRef:
        channel_id, _, message_id = text.partition("/")
        return cls(channel_id, message_id)

    def link(self, scope: str) -> str:
        """The message's Discord link: a server's messages under the server, others under @me."""
        kind, _, ident = scope.partition(":")
        place = ident if kind == "guild" and ident else "@me"
        return f"https://discord.com/channels/{place}/{self.channel_id}/{self.message_id}"


@dataclass(frozen=True)
class Embedding:
    """A text's vector from one embedding model: only vectors of the same model compare."""

    model: str  # the model id that made it (e.g. "amazon.titan-embed-text-v2:0@256")
    vector: tuple[float, ...]  # L2-normalised


@dataclass(frozen=True)
class Memory:
    """One memory: a short fact about its owner."""

    user_id: str
    memory_id: str
    text: str
    created_at: datetime
    updated_at: datetime
    scope: str = GLOBAL_SCOPE
    # When the stale review last kept it: a mark on the record, not part of the memory (equality
    # and the conditional writes ignore it).
    reviewed_at: datetime | None = field(default=None, compare=False)
    # Provenance: the person's own messages (never the bot's lines) the last add or update
    # was decided on, oldest first. Forgetting a memory retires these for learning.
    sources: tuple[SourceRef, ...] = ()
    # Its text's vector (selection's semantic half), with the model that made it. Derived from
    # the text, so not part of the memory's identity: equality and conditional writes ignore it.
    embedding: Embedding | None = field(default=None, compare=False)
    # The last day it holds (a plan, a time-limited situation), in the deployment's time zone;
    # None for a durable fact. Past it, the reply leaves the memory out (``ended``).
    valid_until: date | None = None

    @property
    def owner(self) -> Owner:
        return Owner(self.scope, self.user_id)

    def ended(self, today: date) -> bool:
        """Past its end: ``today`` (the deployment's date) is after its last day."""
        return self.valid_until is not None and today > self.valid_until

    def ends_at(self, zone: tzinfo) -> datetime | None:
        """The moment it ends: midnight after its last day, in the deployment's time zone."""
        return None if self.valid_until is None else day_ends(self.valid_until, zone)

    @property
    def review_after(self) -> datetime:
        """Its place in the stale review's queue: the later of its update and its last review."""
        return max(self.updated_at, self.reviewed_at) if self.reviewed_at else self.updated_at

    def preview(self, until_note: str = "", quote: Callable[[str], str] = str) -> str:
        """The id and the text's start on one line (a line break in a memory cannot start another
        line of the listing), then ``until_note`` (the end, in the reader's words); ``quote`` is how
        the reader's medium shows outside text as written (Discord's markdown escaped)."""
        return f"{self.memory_id} {quote(one_line(self.text)[:SHOW_PREVIEW_CHARS])}{until_note}"


@dataclass(frozen=True)
class MemoryDraft:
    """What the chat model wrote for a memory: its text and, for a plan or a time-limited
    situation, its last day (None: a durable fact, or a writer that gave no end)."""

    text: str
    valid_until: date | None = None


def end_holds(valid_until: date | None, created_at: datetime, zone: tzinfo) -> date | None:
    """``valid_until`` when it can be a memory's end: not before the day the memory was learned
    (``created_at``, in the deployment's zone); otherwise None. The import refuses such a row; a
    model's end that fails it is simply no end."""
    if valid_until is None or valid_until < created_at.astimezone(zone).date():
        return None
    return valid_until


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


@dataclass(frozen=True)
class Exchange:
    """What decides one person's memories: the newest lines of THAT person's own conversation
    with the bot (their messages and the bot's replies to them), oldest first.

    Built only through ``Exchange.of``, the one rule the live extraction and the nightly run
    share: other people's words never enter it, however busy the channel.
    """

    speaker: Speaker
    scope: str
    messages: tuple[Message, ...]

    @classmethod
    def of(cls, speaker: Speaker, scope: str, messages: Sequence[Message]) -> Exchange | None:
        """The speaker's exchange from ``messages``; None when the speaker said nothing usable."""
        own = [m for m in messages if _in_conversation(m, speaker.user_id, scope) and not shows_nothing(m.content)]
        own = own[-EXCHANGE_MESSAGES:]
        if not any(not m.is_bot for m in own):
            return None
        return cls(speaker, scope, tuple(own))

    @property
    def owner(self) -> Owner:
        return Owner(self.scope, self.speaker.user_id)

    @property
    def message_ids(self) -> tuple[str, ...]:
        return tuple(m.message_id for m in self.messages)

    @property
    def since(self) -> datetime:
        """When its oldest line was said: what a memory learned from it rests on (PersonCheck)."""
        return min(m.created_at for m in self.messages)

    @property
    def said_at(self) -> datetime:
        """When the speaker's newest line was said: the time a memory learned from it is dated by
        (a nightly run's too, never the run's)."""
        return max(m.created_at for m in self.messages if not m.is_bot)

    @property
    def sources(self) -> tuple[SourceRef, ...]:
        """The speaker's own lines of the exchange (the bot's lines are not sources)."""
        return tuple(SourceRef(m.channel_id, m.message_id) for m in self.messages if not m.is_bot)

    def speaker_said(self) -> list[str]:
        """The speaker's own lines, oldest first."""
        return [m.content.strip() for m in self.messages if not m.is_bot]

    def render(self) -> str:
        """ "name: text" lines (the Jev HTTP contract's ``exchange`` string): the bot's lines under
        the bot's name and the speaker's under theirs, whatever nickname they chose."""
        lines = []
        for m in self.messages:
            author = BOT_NAME if m.is_bot else _plain_name(self.speaker.name, fallback=f"user {self.speaker.user_id}")
            lines.append(f"{author}: {one_line(m.content)}")  # a line break must not forge another speaker
        return "\n".join(lines)


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


def _in_conversation(message: Message, user_id: str, scope: str) -> bool:
    if message.conversation_of != user_id or message.scope != scope:
        return False
    return message.is_bot or message.author_id == user_id


@dataclass(frozen=True)
class PromptMessage:
    """One message of a prompt: its role and text."""

    role: str  # "system", "user" or "assistant"
    content: str
