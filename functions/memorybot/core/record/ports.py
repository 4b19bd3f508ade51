"""The ports the core depends on. Adapters implement them; unit tests fake them.

Here: the tables' roles (memories and their ledger, messages, people, manifests, runs, idempotency).
The services outside the tables (models, Discord, the worker hand-off, metrics) are in
service_ports.py and the stores' refusals in conflicts.py, both named here too, so that ``ports.X``
is every port.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .conflicts import ConflictError, MoveBlocked, PersonRefused  # noqa: F401 (``ports.X`` names them)
from .domain import (
    Action,
    Actor,
    Embedding,
    Memory,
    Message,
    Owner,
)
from .jobs import Payload
from .person import Person, PersonCheck
from .service_ports import (  # noqa: F401 (named here too: ``ports.X`` is every port)
    AsyncInvoker,
    ChatModel,
    DecisionModel,
    DiscordApi,
    DiscordError,
    DmsClosedError,
    EmbeddingModel,
    Metrics,
    ModelError,
    ModelFailed,
    ModelUnavailable,
    RecordJudge,
    UnusableAnswer,
)

if TYPE_CHECKING:  # the ledger's types, in annotations only: the interactions function's cold start loads none
    from .changes import Change, LedgerEntry, NightlyRun

M = TypeVar("M", bound=Payload)


# ---- the memories and their ledger, by role. Each use case names the roles it uses (its own
# Protocol combining them, never wider than ten methods); one DynamoDB class implements every
# role (adapters/dynamodb_memories.py), as does the unit tests' fake, and the store contract
# (tests/integration/test_store_contract.py) holds both to each. Scoping: every method is keyed by
# the Owner (scope and user) it is given, or the Change's owner; none reaches another profile,
# except ``ReviewQueue.stale`` (the nightly review) and ``RunLedger.ledger_for_run``.


class ProfileReader(Protocol):
    """A person's memories read to be used or shown (each read leaves its ``read`` ledger row
    first), and the scopes the person has memories in."""

    def read_profile(
        self,
        owner: Owner,
        *,
        actor: Actor,
        reason: str,
        limit: int | None,
        run_id: int | None = None,
    ) -> list[Memory]:
        """Up to ``limit`` (None: all) of the owner's memories, most recently updated first.

        Writes one ``read`` ledger row for the event before returning anything.
        """

    def read_selected(
        self,
        owner: Owner,
        choose: Callable[[list[Memory]], list[Memory]],
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
        unused_if: Callable[[], bool] | None = None,
        entry_id: str = "",
    ) -> list[Memory]:
        """The owner's whole profile (one read of their own partition), narrowed by ``choose``
        (the relevance selection, core/prompting/selection.py); what ``choose`` returns, as it ordered it.

        Writes one ``read`` ledger row naming exactly the chosen ids before returning anything
        (the rest were scored, never shown to a model or a person). ``unused_if``, asked once the
        memories are read: when it says so, nothing is returned and no row is written (the reply
        reads the person's switch alongside, and a paused person's memories are not used). An
        exception ``choose`` raises ends the read with it, before any row is written. ``entry_id``
        names the read row (a reply's, so that its "Why?" finds it: core/rights/why.py); "" a fresh one.
        """

    def owners_of(self, user_id: str) -> list[Owner]:
        """Every scope in which the person has memories or ledger rows (export, erasure)."""


class ReadLog(Protocol):
    """The ``read`` row of memories read another way than through a ``ProfileReader``."""

    def log_read(
        self,
        owner: Owner,
        memory_ids: tuple[str, ...],
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
        entry_id: str = "",
    ) -> None:
        """One ``read`` ledger row for memories read some other way (the nightly review, ``why``); raises
        if not written."""


class MemoryWriter(Protocol):
    """A change of one memory, conditioned on the record as read, committed with its ledger row."""

    def get(self, owner: Owner, memory_id: str) -> Memory | None:
        """One memory by key, unlogged: the record a change is conditioned on (inside the core only)."""

    def apply(
        self,
        change: Change,
        *,
        actor: Actor,
        run_id: int | None = None,
        ledger_action: Action | None = None,
        redacted: bool = False,
        check: PersonCheck | None = None,
        ledger_scope: str | None = None,
    ) -> LedgerEntry:
        """Commit the change and its ledger row in one transaction (``redacted``: the row keeps
        ids, action, actor and time, and no before/after text: an erasure's deletes).

        A move (``Change.moves``: the same memory between two of the person's scopes) deletes the
        record where it was and puts it where it goes (only if that id is free there: MoveBlocked
        otherwise), with ONE row in the partition of ``ledger_scope`` (default: the change's owner).

        Conditioned on the record still being ``change.before`` (absent for an add) and, with
        ``check``, on the person's record allowing it (in the same transaction).
        Raises ConflictError (PersonRefused for the check), and changes nothing, if not.
        """


class OvernightNotes(Protocol):
    """Which of an owner's memories the night changed, until the person is told (core/rights/receipts.py)."""

    def note_overnight(self, owner: Owner, memory_ids: Sequence[str]) -> None:
        """Add ``memory_ids`` to the owner's note (a set: a retried step adds nothing twice)."""

    def overnight(self, owner: Owner) -> frozenset[str]:
        """The ids the owner's note holds (empty: none, or told already)."""

    def clear_overnight(self, owner: Owner, seen: frozenset[str] | None = None) -> bool:
        """Remove the note, only if it still holds exactly ``seen`` (None: whatever it holds, as an
        erasure does); True when this call removed it (the caller then tells the person)."""


class ImportWriter(Protocol):
    """Adding a memory once per key (the operator import)."""

    def add_once(
        self,
        memory: Memory,
        once: str,
        *,
        actor: Actor,
        reason: str,
        import_id: str | None = None,
        check: PersonCheck | None = None,
    ) -> LedgerEntry | None:
        """Add ``memory`` with its ledger row (keeping ``import_id``) and the owner's marker
        ``once``, in one transaction, unless the owner has that marker already: then nothing is
        written and the answer is None. Of concurrent calls with the same marker, exactly one adds.

        The marker outlives the memory (a forgotten memory is not added again by the same key).
        Raises ConflictError, writing nothing, if the owner has a memory under ``memory``'s id;
        PersonRefused, writing nothing, if ``check`` is given and the person's record refuses it.
        """

    def has_marker(self, owner: Owner, once: str) -> bool:
        """Whether ``add_once`` wrote the owner's marker ``once`` (a dry run's check; unlogged)."""

    def take_back(self, added: LedgerEntry, once: str, *, reason: str) -> bool:
        """Undo one ``add_once`` (``added`` its ledger row) of a request that failed part way:
        delete the memory, if it is still exactly as added, and the marker ``once``, with a delete
        row in the ledger (actor import, ``reason``), in one transaction. False, writing nothing,
        when the memory changed since (someone acted on it: it stays theirs)."""


class RememberedMessages(Protocol):
    """The person's messages "Remember this" was used on: each is taken in once per person."""

    def claim_message(self, owner: Owner, message_id: str, claim: str, now: datetime) -> bool:
        """Claim the message for one "Remember this" (``claim``: its interaction id), in one
        conditional write: True for the first claim, or when an earlier one lapsed (its job never
        settled it within ``REMEMBER_CLAIM_LEASE``); False while it is claimed, and for good once
        it is learned. Of concurrent claims exactly one is True."""

    def settle_message(self, owner: Owner, message_id: str, claim: str, *, learned: bool) -> None:
        """What came of ``claim``: learned, the message is taken in for good; otherwise the claim
        is given back, so a later "Remember this" may try again. A claim that is no longer this
        one's (it lapsed and was taken) is left alone."""


class ReviewQueue(Protocol):
    """The nightly review of memories untouched for long (every owner: one of the two cross-owner
    reads)."""

    def stale(self, updated_before: datetime, limit: int) -> list[Memory]:
        """Memories of any owner, in any scope, not updated since ``updated_before``, least recently
        reviewed first: by ``review_after`` = the later of their update and their last review."""

    def ended(self, now: datetime, limit: int) -> list[Memory]:
        """Memories of any owner, in any scope, whose end (``Memory.ends_at`` in the deployment's
        time zone) has come by ``now`` and that no write or review has touched since it came
        (``review_after`` before it), earliest ended first."""

    def mark_reviewed(self, memory: Memory, at: datetime) -> None:
        """Mark a memory kept by the stale review at ``at`` (it goes behind those not yet reviewed).

        Not a change of the memory: text and times stay as they are, so no ledger row (the
        review's ``read`` row records the review). Only if the record is still exactly
        ``memory``; a record changed meanwhile is left alone (no error).
        """


class VectorWriter(Protocol):
    """A memory's vector, stored after its text is written (learning) or later (the backfill)."""

    def set_embedding(self, memory: Memory, embedding: Embedding) -> bool:
        """Store ``embedding`` as the memory's vector, only if the record is still exactly ``memory``
        (False otherwise: changed, forgotten or erased meanwhile; a later write brings its own
        vector). Derived from the text, like a review mark: no ledger row."""


class VectorIndex(Protocol):
    """The memories still without a vector of the model (the nightly backfill's pass)."""

    def without_embedding(self, model: str, limit: int, *, start: str = "") -> tuple[list[Memory], str]:
        """Up to ``limit`` memories of any owner with no vector from ``model`` (none, or another
        model's), reading a bounded part of the table from the cursor ``start`` ("" = the
        beginning); and the cursor to go on from next time ("" = the end was reached)."""


class Ledger(Protocol):
    """An owner's ledger rows (memory_log), all of them (export, erasure)."""

    def ledger_for(
        self,
        owner: Owner,
        limit: int | None = 100,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LedgerEntry]:
        """The owner's ledger rows, newest first (``limit`` None: all of them); with ``since`` and
        ``until``, only those written between (a reply's read row, for its "Why?")."""


class History(Protocol):
    """An owner's changes, page by page, and one row by its key (``/memory history`` and undo)."""

    def changes_of(self, owner: Owner, limit: int, *, older_than: str = "") -> list[LedgerEntry]:
        """Up to ``limit`` of the owner's rows that changed a memory (add, update, delete, rollback,
        undo: no reads), newest first, only those whose ``key`` sorts before ``older_than`` when
        given (the next page of ``/memory history``)."""

    def ledger_entry(self, owner: Owner, key: str) -> LedgerEntry | None:
        """The owner's ledger row with this ``key``; None when the owner has none (another
        person's key is simply not found)."""


class RunLedger(Protocol):
    """The rows a nightly run wrote, whoever they are about (the summary, rollback)."""

    def ledger_for_run(self, run_id: int) -> list[LedgerEntry]:
        """The ledger rows a nightly run wrote, newest first."""


class ForgottenSources(Protocol):
    """The messages that never teach again, because a memory learned from them was forgotten."""

    def forgotten_sources(self, owner: Owner) -> frozenset[str]:
        """The ids of the messages every memory the owner forgot (by command) was learned from:
        never used to learn again. One small read, whatever the length of the owner's history:
        ``apply`` records a forget's sources (a delete with actor command) with the delete."""


class Erasing(Protocol):
    """What only an erasure does: its own ledger row, the redaction of the person's rows, and the
    removal of their record of forgotten sources."""

    def record(self, entry: LedgerEntry) -> None:
        """Append one ledger row that changes no memory (an erasure's own row)."""

    def redact(self, entry: LedgerEntry) -> None:
        """Remove the row's before/after text, keeping its skeleton (erasure only)."""

    def erase_kept_beside(self, owner: Owner) -> None:
        """Remove what the store keeps beside the owner's memories: their record of forgotten
        sources and what ranks their memories, which held their texts (erasure only, after the
        memories are deleted: it is personal data)."""

    def erase_unreadable(self, owner: Owner, *, actor: Actor, reason: str) -> tuple[int, int]:
        """Delete the owner's memory records that no reader can read (every reader skips them),
        each with a ledger row of ids only, and redact the owner's ledger rows no reader can
        read (erasure only: nothing of the person may stay for being malformed). The counts
        (memories deleted, ledger rows redacted)."""


class MemoryStore(
    OvernightNotes,
    ProfileReader,
    ReadLog,
    MemoryWriter,
    ImportWriter,
    RememberedMessages,
    ReviewQueue,
    VectorWriter,
    VectorIndex,
    Ledger,
    History,
    RunLedger,
    ForgottenSources,
    Erasing,
):
    """Every role at once: what the composition root wires, one object for all of them (the
    DynamoDB store; the fake in unit tests). A class, not a Protocol: an implementation says it
    is one by subclassing, and no use case depends on it, only on the roles it names."""


class MessageStore(Protocol):
    def put(self, message: Message, *, check: PersonCheck | None = None) -> bool:
        """Store one message; storing the same message id again changes nothing. True when this
        call stored it, False when that id was stored already (a redelivery, a replay). With
        ``check``, only if the person's record allows it, in the same transaction: PersonRefused
        (nothing stored) when it does not."""

    def recent(self, channel_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        """The channel's newest ``limit`` messages (with ids up to ``up_to``, if given), oldest first."""

    def conversation(self, channel_id: str, user_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        """The newest ``limit`` lines of the person's own conversation with the bot in the channel
        (their messages, the bot's replies to them; ids up to ``up_to``, if given), oldest first."""

    def between(self, start: datetime, end: datetime) -> list[Message]:
        """Every message with start <= time < end, in all channels, oldest first."""

    def of_conversation(self, user_id: str, refs: Sequence[tuple[str, str]]) -> list[Message]:
        """The messages named by ``refs`` ((channel id, message id) pairs) that belong to the
        person's own conversation with the bot, oldest first."""

    def of_person(self, user_id: str) -> list[Message]:
        """Every stored message the person wrote, and the bot's replies to them in every channel
        (found by the person they answer, even when none of the person's own lines is left)."""

    def delete(self, message: Message) -> None:
        """Delete one stored message (erasure)."""


class PeopleStore(Protocol):
    """One record per person, everywhere (``person.Person``)."""

    def get(self, user_id: str) -> Person:
        """The person's record (all defaults when there is none)."""

    def pause(self, user_id: str, entry: LedgerEntry) -> bool:
        """Pause at ``entry.at``, with its ledger row in the same transaction; False (nothing
        written) when already paused."""

    def resume(self, user_id: str, entry: LedgerEntry) -> bool:
        """Resume at ``entry.at``, with its ledger row; False (nothing written) when not paused."""

    def claim_notice(self, user_id: str, scope: str, check: PersonCheck | None = None) -> bool:
        """True exactly once per person and scope (a conditional write): the caller gives the notice.
        With ``check``, False too when the person's record does not allow it (erased since the turn
        began: the record an erasure left is not written again)."""

    def release_notice(self, user_id: str, scope: str) -> None:
        """Undo a claim whose notice could not be sent, so that a later turn gives it."""

    def set_receipts(self, user_id: str, enabled: bool) -> bool:
        """Turn the person's receipts on or off (``Person.receipts``); False when already so."""

    def start_forget_all(self, user_id: str, scope: str, at: datetime, job_id: str, stale_before: datetime) -> bool:
        """Stamp a forget-all in ``scope`` begun ``at`` (before its deletes), its job ``job_id``
        running: nothing said before ``at`` is learned there again, and nothing is restored there
        until the job is done. False (nothing written) while another job runs there, unless that
        one began before ``stale_before`` (its worker is gone)."""

    def finish_forget_all(self, user_id: str, scope: str, started: datetime, at: datetime) -> bool:
        """The job of the forget-all begun ``started`` deleted everything ``at``; False (nothing
        written) when a newer forget-all took the scope over."""

    def erased(self, user_id: str, at: datetime) -> None:
        """Replace the record with the erasure's marker alone: the switch and notices go with the
        rest of the person's data; nothing that started before ``at`` writes for them after it."""


class ManifestStore(Protocol):
    """Where the nightly plan writes its manifest (ids only) and the map reads it (S3 deployed)."""

    def write(self, key: str, entries: list[dict]) -> None: ...

    def read(self, key: str) -> list[dict]: ...


class RunStore(Protocol):
    def claim(self, day_label: str, started_at: datetime, hold: timedelta = ...) -> NightlyRun | None:
        """The JST day's run, for this worker until ``started_at + hold`` (default NIGHTLY_MAX_DURATION;
        the state machine holds it for its whole execution timeout).

        A new run (next integer id) if the day is unclaimed. The day's unfinished run, taken
        over, if its worker is gone (released, or past its time), so a retry finishes the
        work. None if the day's run is finished, rolled back, or still being worked on.
        """

    def release(self, run_id: int) -> None:
        """The worker gives up an unfinished run (after a failure): a retry may take it over at once."""

    def finish(self, run: NightlyRun) -> None:
        """Store the run's diary and summary; with a finish time, it has no live worker any more
        (without one, this saves progress for a retry to take over)."""

    def get(self, run_id: int) -> NightlyRun | None: ...

    def step_mark(self, run_id: int, name: str, kind: type[M]) -> M | None:
        """The result a step of the run stored under ``name`` (e.g. one speaker's), as ``kind``, if any."""

    def mark_step(self, run_id: int, name: str, mark: M) -> M:
        """Store a step's result once: the first mark stands. Answers the stored mark."""

    def latest(self) -> NightlyRun | None: ...

    def claim_rollback(self, run_id: int, owner: str, now: datetime, lease: timedelta) -> RollbackClaim:
        """Take the run's rollback lease for ``owner`` until ``now + lease``.

        CLAIMED when taken (no lease held, or the holder's lease expired: an interrupted
        rollback can be retried); BUSY while another owner holds it; DONE when the run is
        already rolled back; MISSING when there is no such run.
        """

    def mark_rolled_back(
        self, run_id: int, owner: str, entry: LedgerEntry | None = None, counts: dict | None = None
    ) -> bool:
        """Mark the run rolled back and drop the lease, only if ``owner`` still holds it.

        ``entry`` (the rollback's own ledger row, with its time and counts) commits in the
        same transaction, and its time and counts are kept on the run."""

    def release_rollback(self, run_id: int, owner: str) -> None:
        """Give the lease back (after a failure) so that a retry need not wait for it to expire."""


class Idempotency(Protocol):
    """Work done once per (name, key) across processes and retries (the dedup table deployed).
    The answer is stored as JSON and a repeat gets the stored answer, so ``work`` answers a JSON
    object. ``invocation`` is the caller's Lambda context, if any: an in-progress record lapses
    with that invocation instead of at the record's expiry."""

    def run(self, name: str, key: str, work: Callable[[], dict[str, Any]], *, invocation: Any = None) -> dict[str, Any]:
        """``work()``'s answer, once; raises while another copy is still running it (the caller is retried)."""

    def once(
        self, name: str, key: str, work: Callable[[], dict[str, Any]], *, invocation: Any = None
    ) -> dict[str, Any] | None:
        """As ``run``, but None while another copy is still running it."""


class AttemptCounter(Protocol):
    """How many times a worker's job found the model unavailable (Lambda does not tell a function
    which retry it is running)."""

    def count(self, worker: str, job_id: str) -> int:
        """Count one more unavailable attempt of the job; the count including this one."""


class RollbackClaim(str, Enum):
    CLAIMED = "claimed"
    BUSY = "busy"
    DONE = "done"
    MISSING = "missing"
