"""What the ledger and the runs table hold: one intended change to a memory, the ledger's row of a
read or a change, and a nightly run with its summary. Plain dataclasses, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime

from .domain import GLOBAL_SCOPE, Action, Actor, Memory, Owner, SourceRef, iso


def _token_hex(size: int) -> str:
    import secrets  # on first use: the interactions function's cold start needs it for no answer

    return secrets.token_hex(size)


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
        if self.before and self.after:
            same_person = self.before.user_id == self.after.user_id and self.before.memory_id == self.after.memory_id
            if not same_person or (self.before.scope != self.after.scope and self.action is not Action.MOVE):
                raise ValueError("a change cannot move a memory between owners, scopes or ids (but a move's scopes)")

    @property
    def user_id(self) -> str:
        return (self.before or self.after).user_id  # type: ignore[union-attr]

    @property
    def owner(self) -> Owner:
        return (self.before or self.after).owner  # type: ignore[union-attr]

    @property
    def memory_id(self) -> str:
        return (self.before or self.after).memory_id  # type: ignore[union-attr]

    @property
    def moves(self) -> bool:
        """Between two of the person's scopes (/memory everywhere, here, and their undo)."""
        return self.before is not None and self.after is not None and self.before.scope != self.after.scope


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
    entry_id: str = field(default_factory=lambda: _token_hex(6))
    scope: str = GLOBAL_SCOPE
    # The messages the change was decided on (the after state's sources; a delete's: the
    # before state's). Kept outside before/after, so it survives an erasure's redaction.
    sources: tuple[SourceRef, ...] = ()
    redacted: bool = False  # an erasure removed before/after: a rollback cannot restore it
    # An imported memory's id in the system it came from (actor import): provenance, no text.
    import_id: str | None = None

    @property
    def owner(self) -> Owner:
        return Owner(self.scope, self.user_id)

    @property
    def key(self) -> str:
        """The row's key within its owner's ledger: its time first, so the owner's rows sort by time."""
        return f"{iso(self.at)}#{self.entry_id}"


# The ledger partition for rows about a whole run rather than one person's memory (a rollback's
# own row). Not a Discord id, so it never meets a person's rows.
RUN_LEDGER_OWNER = "nightly-runs"


# The reason on a decay pass's deletes: the run summary counts them apart from extraction's.
DECAY_REASON = "nightly decay: jev review delete"


@dataclass
class RunSummary:
    """What a nightly run did, stored with the run as JSON. Ids and counts only: no memory or message text."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    decayed: list[str] = field(default_factory=list)  # removed by the decay pass, not extraction
    failures: int = 0  # model calls that gave no usable answer
    # Speakers (owner keys) whose step still failed after its retries: recorded, never redone.
    failed_speakers: list[str] = field(default_factory=list)
    model_calls: int = 0
    conflicts: int = 0  # changes dropped because the record changed since it was read
    speakers: int = 0
    chunks: int = 0
    reviews: int = 0  # memories the night's review put to the model
    embedded: int = 0  # memories given a vector by the embedding backfill
    # Where the backfill's pass over the memories stopped (keys only): the next night goes on from there.
    embedding_cursor: str = ""

    @classmethod
    def saved(cls, data: dict) -> RunSummary:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def carry_over(self, entries: Sequence[LedgerEntry]) -> None:
        """The run's changes, from its ledger rows: each counted once, whichever attempt of a
        step made it (a retried speaker's first, interrupted attempt included)."""
        for entry in sorted(entries, key=lambda e: e.at):
            if entry.action is Action.ADD:
                self.added += entry.memory_ids
            elif entry.action is Action.UPDATE:
                self.updated += entry.memory_ids
            elif entry.action is Action.DELETE:
                (self.decayed if entry.reason == DECAY_REASON else self.deleted).extend(entry.memory_ids)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class NightlyRun:
    """One nightly run, as the run store keeps it."""

    run_id: int
    day_label: str
    started_at: datetime
    finished_at: datetime | None = None
    diary: str = ""
    summary: RunSummary = field(default_factory=lambda: RunSummary())
    rolled_back: bool = False
    rolled_back_at: datetime | None = None
    rollback_counts: dict = field(default_factory=dict)  # {"reverted": n, "skipped": m}
    # While unfinished: until when its worker may still be writing (None: no live worker).
    worked_until: datetime | None = None

    def in_progress(self, now: datetime) -> bool:
        return self.finished_at is None and self.worked_until is not None and now < self.worked_until
