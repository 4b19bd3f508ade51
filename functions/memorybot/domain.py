"""The memory domain: plain dataclasses, no I/O.

Times are timezone-aware UTC datetimes in the domain; adapters store them as
fixed-width ISO 8601 strings (see ``iso``) so that they sort as text.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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
# A nightly function runs at most 15 minutes (Lambda's limit): a run nobody has finished
# by then has lost its worker.
NIGHTLY_MAX_DURATION = timedelta(minutes=15)


class Actor(str, Enum):
    REPLY = "reply"
    COMMAND = "command"
    EXTRACTION = "extraction"
    NIGHTLY = "nightly"


class Action(str, Enum):
    READ = "read"
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    ROLLBACK = "rollback"


class Verdict(str, Enum):
    KEEP = "keep"
    UPDATE = "update"
    DELETE = "delete"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(at: datetime) -> str:
    """Fixed-width UTC ISO 8601 (microseconds, 'Z'), so stored times sort as text."""
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def snowflake_time(snowflake: str | int) -> datetime:
    """The creation time Discord encodes in every snowflake id."""
    ms = (int(snowflake) >> 22) + DISCORD_EPOCH_MS
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


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
    return "".join(secrets.choice(MEMORY_ID_ALPHABET) for _ in range(MEMORY_ID_LENGTH))


def is_memory_id(text: str) -> bool:
    return len(text) == MEMORY_ID_LENGTH and all(c in MEMORY_ID_ALPHABET for c in text)


@dataclass(frozen=True)
class Memory:
    user_id: str
    memory_id: str
    text: str
    created_at: datetime
    updated_at: datetime

    def preview(self) -> str:
        return f"{self.memory_id} {self.text[:SHOW_PREVIEW_CHARS]}"


@dataclass(frozen=True)
class Message:
    """One line of the channel log. Its time is the time in its snowflake."""

    channel_id: str
    message_id: str
    author_id: str
    author_name: str
    content: str
    is_bot: bool = False

    @property
    def created_at(self) -> datetime:
        return snowflake_time(self.message_id)


@dataclass(frozen=True)
class Change:
    """One intended change to one memory: the state read (before) and the state wanted (after).

    add: before is None. delete: after is None. The store commits it only if the
    record is still exactly ``before``.
    """

    action: Action
    before: Memory | None
    after: Memory | None
    reason: str

    def __post_init__(self) -> None:
        subject = self.before or self.after
        if subject is None:
            raise ValueError("a change needs a before or an after state")
        if self.before and self.after and (
            self.before.user_id != self.after.user_id or self.before.memory_id != self.after.memory_id
        ):
            raise ValueError("a change cannot move a memory between owners or ids")

    @property
    def user_id(self) -> str:
        return (self.before or self.after).user_id  # type: ignore[union-attr]

    @property
    def memory_id(self) -> str:
        return (self.before or self.after).memory_id  # type: ignore[union-attr]


@dataclass(frozen=True)
class LedgerEntry:
    """One row of memory_log: a read or a change, who did it and why."""

    user_id: str
    action: Action
    actor: Actor
    reason: str
    at: datetime
    memory_ids: tuple[str, ...] = ()
    before: Memory | None = None
    after: Memory | None = None
    run_id: int | None = None
    entry_id: str = field(default_factory=lambda: secrets.token_hex(6))


# The ledger partition for rows about a whole run rather than one person's memory (a rollback's
# own row). Not a Discord id, so it never meets a person's rows.
RUN_LEDGER_OWNER = "nightly-runs"


@dataclass(frozen=True)
class NightlyRun:
    run_id: int
    day_label: str
    started_at: datetime
    finished_at: datetime | None = None
    diary: str = ""
    summary: dict = field(default_factory=dict)
    rolled_back: bool = False
    rolled_back_at: datetime | None = None
    rollback_counts: dict = field(default_factory=dict)  # {"reverted": n, "skipped": m}
    # While unfinished: until when its worker may still be writing (None: no live worker).
    worked_until: datetime | None = None

    def in_progress(self, now: datetime) -> bool:
        return self.finished_at is None and self.worked_until is not None and now < self.worked_until


@dataclass(frozen=True)
class PromptMessage:
    role: str  # "system", "user" or "assistant"
    content: str
