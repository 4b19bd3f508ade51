"""Your timeline: ``/memory history`` lists the newest changes of the caller's memories in one
scope, and its Undo puts one change back.

Both read only the caller's own ledger partition (``Owner``): another person's change is not
found. An Undo is the rollback's rule for one row (``rollback.reversal``): it restores the state
before the change only if the record is still exactly what the change left, and under the
rollback's person check (``rollback.restoring``), so it never brings back what a forget-all or an
erasure removed. It commits with its own ledger row (actor command, action undo).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Protocol

from ..record.changes import DECAY_REASON, LedgerEntry
from ..record.domain import CHANGE_ACTIONS, SHOW_PREVIEW_CHARS, Action, Actor, Memory, Owner, one_line
from ..record.person import Person
from ..record.ports import ConflictError, History, MemoryWriter, PeopleStore, PersonRefused, ReadLog
from .everywhere import MoveOutcome, everywhere_of, is_move, move_back
from .rollback import restoring, reversal

logger = logging.getLogger(__name__)

HISTORY_PAGE = 6  # changes per page: each line with its two previews fits Discord's 2,000 characters
HISTORY_REASON = "memory history"


class HistoryMemories(History, ReadLog, MemoryWriter, Protocol):
    """The roles of the memory store ``/memory history`` and its undo use."""


class ChangeKind(str, Enum):
    ADDED = "added"
    UPDATED = "updated"
    DELETED = "deleted"
    DECAYED = "decayed"
    FORGOTTEN = "forgotten"
    ERASED = "erased"
    ROLLED_BACK = "rolled back"
    IMPORTED = "imported"
    UNDONE = "undone"
    MOVED = "moved"  # between a scope and the person's own (/memory everywhere, here)


class Who(str, Enum):
    YOU = "you"
    CONVERSATION = "conversation"
    NIGHT = "night"
    OPERATOR = "operator"
    IMPORT = "import"


@dataclass(frozen=True)
class HistoryLine:
    """One change as the person sees it: ids, kind, who, when and the start of each state."""

    key: str  # the ledger row's key (what its Undo button names)
    memory_id: str
    kind: ChangeKind
    who: Who
    at: datetime
    before: str  # the first 80 characters of the state before ("" for an add)
    after: str  # ... and after ("" for a delete)
    redacted: bool  # an erasure removed its text
    undoable: bool  # its result is still current and the person's record allows restoring


@dataclass(frozen=True)
class HistoryPage:
    lines: tuple[HistoryLine, ...]
    older: str = ""  # the key to page on from (older changes); "" when there are none


def kind_of(entry: LedgerEntry) -> ChangeKind:
    if entry.action is Action.MOVE:
        return ChangeKind.MOVED
    if entry.action is Action.UNDO:
        return ChangeKind.UNDONE
    if entry.action is Action.ROLLBACK:
        return ChangeKind.ROLLED_BACK
    if entry.action is Action.ADD:
        return ChangeKind.IMPORTED if entry.actor is Actor.IMPORT else ChangeKind.ADDED
    if entry.action is Action.UPDATE:
        return ChangeKind.UPDATED
    if entry.reason == DECAY_REASON:
        return ChangeKind.DECAYED
    if entry.actor is Actor.COMMAND:
        return ChangeKind.FORGOTTEN
    return ChangeKind.ERASED if entry.actor is Actor.OPERATOR else ChangeKind.DELETED


def who_of(entry: LedgerEntry) -> Who:
    if entry.action is Action.ROLLBACK:  # a rollback is the operator's, whatever run it replays
        return Who.OPERATOR
    return {
        Actor.COMMAND: Who.YOU,
        Actor.EXTRACTION: Who.CONVERSATION,
        Actor.NIGHTLY: Who.NIGHT,
        Actor.IMPORT: Who.IMPORT,
    }.get(entry.actor, Who.OPERATOR)


def state_preview(memory: Memory | None) -> str:
    return one_line(memory.text)[:SHOW_PREVIEW_CHARS] if memory is not None else ""


def history(
    memories: HistoryMemories,
    owner: Owner,
    *,
    older_than: str = "",
    people: PeopleStore | None = None,
    limit: int = HISTORY_PAGE,
) -> HistoryPage:
    """The owner's newest ``limit`` changes (older than the key ``older_than``, when paging on),
    each marked undoable when an Undo would restore it now. The memories it shows are a read
    (one ``read`` row, actor command)."""
    rows = memories.changes_of(owner, limit + 1, older_than=older_than)
    page, more = rows[:limit], len(rows) > limit
    current: dict[str, Memory | None] = {}
    for entry in page:
        if entry.memory_ids and entry.memory_ids[0] not in current:
            # A move's record is where it went (a scope of the same person's); any other row's, here.
            where = entry.after.owner if is_move(entry) and entry.after is not None else owner
            current[entry.memory_ids[0]] = memories.get(where, entry.memory_ids[0])
    if current:
        memories.log_read(owner, tuple(current), actor=Actor.COMMAND, reason=HISTORY_REASON)
    person = people.get(owner.user_id) if people is not None else None
    lines = tuple(
        HistoryLine(
            entry.key,
            entry.memory_ids[0] if entry.memory_ids else "",
            kind_of(entry),
            who_of(entry),
            entry.at,
            state_preview(entry.before),
            state_preview(entry.after),
            entry.redacted,
            _undoable(entry, current.get(entry.memory_ids[0]) if entry.memory_ids else None, person),
        )
        for entry in page
    )
    return HistoryPage(lines, page[-1].key if more and page else "")


def _undoable(entry: LedgerEntry, current: Memory | None, person: Person | None) -> bool:
    if entry.action not in CHANGE_ACTIONS or not entry.memory_ids:
        return False
    if is_move(entry):  # its record is in the scope it went to
        return current == entry.after
    change = reversal(entry, current, UNDO_REASON)
    if change is None:
        return False
    check = restoring(entry, change)
    return check is None or person is None or check.allows(person)


UNDO_REASON = "undo in memory history"


class UndoOutcome(str, Enum):
    UNDONE = "undone"
    CHANGED = "changed_since"  # the record is no longer what the change left: nothing written
    FINAL = "final"  # it would bring back what a forget-all or an erasure removed: nothing written
    NOT_FOUND = "not_found"  # no such change of the caller's (or not one an Undo can reverse)


@dataclass(frozen=True)
class UndoResult:
    outcome: UndoOutcome
    memory_id: str = ""
    kind: ChangeKind | None = None  # what was undone


def undo(memories: HistoryMemories, owner: Owner, key: str) -> UndoResult:
    """Undo the owner's change ``key``: one conditional write with its ledger row (actor command,
    action undo), under the rollback's conditions. Logs carry ids only."""
    # A receipt's change of an "everywhere" memory is in the person's own scope's rows.
    entry = memories.ledger_entry(owner, key) or memories.ledger_entry(everywhere_of(owner.user_id), key)
    if entry is None or entry.action not in CHANGE_ACTIONS or not entry.memory_ids:
        return UndoResult(UndoOutcome.NOT_FOUND)
    memory_id, kind = entry.memory_ids[0], kind_of(entry)
    if entry.redacted:  # an erasure removed its states: nothing to restore from, and nothing should be
        return UndoResult(UndoOutcome.FINAL, memory_id, kind)
    if is_move(entry):
        moved = move_back(memories, entry)
        outcome = UndoOutcome.UNDONE if moved.outcome is MoveOutcome.MOVED else UndoOutcome.CHANGED
        return UndoResult(outcome, memory_id, kind)
    change = reversal(entry, memories.get(entry.owner, memory_id), UNDO_REASON)
    if change is None:
        return UndoResult(UndoOutcome.CHANGED, memory_id, kind)
    try:
        memories.apply(change, actor=Actor.COMMAND, ledger_action=Action.UNDO, check=restoring(entry, change))
    except PersonRefused:
        logger.info("undo refused by the person's record", extra={"user_id": owner.user_id, "memory_id": memory_id})
        return UndoResult(UndoOutcome.FINAL, memory_id, kind)
    except ConflictError:  # changed between our read and the write
        return UndoResult(UndoOutcome.CHANGED, memory_id, kind)
    logger.info("undo done", extra={"user_id": owner.user_id, "memory_id": memory_id, "undone": kind.value})
    return UndoResult(UndoOutcome.UNDONE, memory_id, kind)
