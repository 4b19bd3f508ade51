"""The memory domain: plain dataclasses, no I/O. The memories and what decides them (a model's
decision, the speaker and their exchange, a prompt's messages), beside the terms every answer uses
(``terms``: the design's numbers, actors and actions, scopes and owners, messages, ids and times),
named here too; the person's record is ``person``, a change and the ledger's rows ``changes``.

Times are timezone-aware UTC datetimes in the domain; adapters store them as
fixed-width ISO 8601 strings (see ``iso``) so that they sort as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from enum import Enum

from .dates import day_ends
from .terms import (  # noqa: F401 (named here too: ``domain.X`` is the whole domain)
    ADD_THRESHOLD,
    BOT_NAME,
    CHANGE_ACTIONS,
    DISCORD_EPOCH_MS,
    DISPLAY_NAME_MAX_CHARS,
    DM_SCOPE,
    EVERYWHERE_SCOPE,
    EXCHANGE_MESSAGES,
    GLOBAL_SCOPE,
    JST,
    MAX_SNOWFLAKE,
    MEMORY_ID_ALPHABET,
    MEMORY_ID_LENGTH,
    MEMORY_TEXT_MAX_CHARS,
    NIGHTLY_EXECUTION_TIMEOUT,
    NIGHTLY_MAX_DURATION,
    PROFILE_LIMIT,
    REMEMBER_CLAIM_LEASE,
    SHOW_PREVIEW_CHARS,
    WORTH_THRESHOLD,
    Action,
    Actor,
    Message,
    Owner,
    ScopeMode,
    is_memory_id,
    is_snowflake,
    iso,
    jst_day,
    new_memory_id,
    one_line,
    parse_iso,
    plain_name,
    scope_for,
    shows_nothing,
    snowflake_at,
    snowflake_time,
    text_problem,
    utcnow,
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


@dataclass(frozen=True)
class Speaker:
    """The person a decision is about: their id, and their display name (user-controlled, never trusted)."""

    user_id: str
    name: str


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


class StoredVector(Sequence[float]):
    """A vector as the store keeps it: small integer codes and one scale (the i-th value is
    ``codes[i] * scale``). Read back this way, ranking multiplies the codes by the query and scales
    the sum once, instead of making a float of every value of every memory read (a large profile's
    first read decodes 2,000 of them). Equal to any sequence of the same values."""

    __slots__ = ("codes", "scale")

    def __init__(self, codes: tuple[int, ...], scale: float) -> None:
        self.codes = codes
        self.scale = scale

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(c * self.scale for c in self.codes[index])
        return self.codes[index] * self.scale

    def __iter__(self):
        scale = self.scale
        return (c * scale for c in self.codes)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredVector):
            return (self.codes, self.scale) == (other.codes, other.scale)
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"StoredVector({len(self.codes)} codes)"


@dataclass(frozen=True)
class Embedding:
    """A text's vector from one embedding model: only vectors of the same model compare."""

    model: str  # the model id that made it (e.g. "amazon.titan-embed-text-v2:0@256")
    vector: Sequence[float]  # L2-normalised: a tuple as a model made it, or a StoredVector as read


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
            author = BOT_NAME if m.is_bot else plain_name(self.speaker.name, self.speaker.user_id)
            lines.append(f"{author}: {one_line(m.content)}")  # a line break must not forge another speaker
        return "\n".join(lines)


def _in_conversation(message: Message, user_id: str, scope: str) -> bool:
    if message.conversation_of != user_id or message.scope != scope:
        return False
    return message.is_bot or message.author_id == user_id


@dataclass(frozen=True)
class PromptMessage:
    """One message of a prompt: its role and text."""

    role: str  # "system", "user" or "assistant"
    content: str
