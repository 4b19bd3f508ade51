"""Your memories where you choose: one memory moved into the person's own scope, read in every
server and DM beside each scope's own (``/memory everywhere``), and back (``/memory here``).

The person's own scope is ``Owner(EVERYWHERE_SCOPE, user_id)``: only this person's, keyed by their
id as every profile is, so it never reaches anyone else's prompt, DM or file. Nothing is learned
into it; only the person moves a memory there. A move is one transaction: the record leaves one
scope and arrives in the other under the same id, with ONE ledger row (before and after, each with
its scope) in the partition of the scope the person was in, so that scope's ``/memory history``
lists it and its Undo moves it back (``undo_move``: only while the record is still what the move
left, and its old place is free).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from enum import Enum

from ..record.catalog import text
from ..record.changes import Change, LedgerEntry
from ..record.domain import EVERYWHERE_SCOPE, Action, Actor, Memory, Owner, is_memory_id
from ..record.person import Basis, PersonCheck
from ..record.ports import ConflictError, MemoryWriter, MoveBlocked, PeopleStore, ProfileReader
from .commands import FORGET_ALL_COUNT_REASON, CommandMemories, forget_all

logger = logging.getLogger(__name__)

MOVE_REASON = "user moved a memory"
UNDO_MOVE_REASON = "undo in memory history"


def everywhere_of(user_id: str) -> Owner:
    """The person's own scope: their "everywhere" memories."""
    return Owner(EVERYWHERE_SCOPE, user_id)


def owners_read(owner: Owner) -> tuple[Owner, ...]:
    """Whose memories a reader in ``owner``'s scope reads: the scope's own and the person's own."""
    return (owner,) if owner.scope == EVERYWHERE_SCOPE else (owner, everywhere_of(owner.user_id))


MoveMemories = MemoryWriter  # the role a move uses: a move is a change (``Change.moves``)


class MoveOutcome(str, Enum):
    MOVED = "moved"
    NOT_FOUND = "not_found"
    BLOCKED = "blocked"  # the destination holds a memory under that id
    CHANGED = "changed"  # changed between the read and the move


@dataclass(frozen=True)
class MoveResult:
    outcome: MoveOutcome
    memory_id: str
    entry: LedgerEntry | None = None


def move(memories: MoveMemories, owner: Owner, memory_id: str, *, everywhere: bool) -> MoveResult:
    """Move the caller's memory ``memory_id`` from their scope ``owner`` into their own scope
    (``everywhere``), or from their own scope into ``owner``'s. Someone else's id is not found."""
    memory_id = memory_id.strip().lower()
    if not is_memory_id(memory_id) or owner.scope == EVERYWHERE_SCOPE:
        return MoveResult(MoveOutcome.NOT_FOUND, memory_id[:20])
    yours = everywhere_of(owner.user_id)
    source, destination = (owner, yours) if everywhere else (yours, owner)
    current = memories.get(source, memory_id)
    if current is None:
        return MoveResult(MoveOutcome.NOT_FOUND, memory_id)
    return _moved(memories, current, destination, owner.scope, Action.MOVE, MOVE_REASON)


def _moved(
    memories: MemoryWriter, current: Memory, destination: Owner, ledger_scope: str, action: Action, reason: str
) -> MoveResult:
    # Its text, times and sources go with it unchanged: only the scope differs.
    arrived = replace(current, scope=destination.scope)
    try:
        entry = memories.apply(
            Change(Action.MOVE, current, arrived, reason),
            actor=Actor.COMMAND,
            ledger_action=action,
            ledger_scope=ledger_scope,
            # it stores the record again: never for a person erased since it was last written
            check=PersonCheck(current.user_id, current.updated_at, Basis.STORE),
        )
    except MoveBlocked:
        return MoveResult(MoveOutcome.BLOCKED, current.memory_id)
    except ConflictError:
        return MoveResult(MoveOutcome.CHANGED, current.memory_id)
    where = "everywhere" if destination.scope == EVERYWHERE_SCOPE else "here"
    logger.info("memory moved", extra={"memory_id": current.memory_id, "to": where})
    return MoveResult(MoveOutcome.MOVED, current.memory_id, entry)


def is_move(entry: LedgerEntry) -> bool:
    """A row that moved a memory between scopes (a move, or the undo of one)."""
    return entry.before is not None and entry.after is not None and entry.before.scope != entry.after.scope


def move_back(memories: MoveMemories, entry: LedgerEntry) -> MoveResult:
    """Undo a move: the record goes back where it was, only if it is still exactly what the move
    left (``entry.after``) and its old place is free. One row, action undo, in the same partition."""
    assert entry.before is not None and entry.after is not None
    current = memories.get(entry.after.owner, entry.after.memory_id)
    if current is None or current != entry.after:
        return MoveResult(MoveOutcome.CHANGED, entry.after.memory_id)
    return _moved(memories, current, entry.before.owner, entry.scope, Action.UNDO, UNDO_MOVE_REASON)


def undoable_move(memories: MemoryWriter, entry: LedgerEntry) -> bool:
    assert entry.after is not None
    return memories.get(entry.after.owner, entry.after.memory_id) == entry.after


class _NoneOfThem(Exception):
    """None of the person's "everywhere" memories is wanted: the read ends without its row."""


def read_everywhere(memories: ProfileReader, user_id: str, *, actor: Actor, reason: str) -> list[Memory]:
    """Every "everywhere" memory of the person (shown, counted), newest first; a ``read`` row in their
    own scope only when there are some (a person with none gets no row and no scope of that name)."""

    def every_one(profile: list[Memory]) -> list[Memory]:
        if not profile:
            raise _NoneOfThem
        return sorted(profile, key=lambda m: m.updated_at, reverse=True)

    try:
        return memories.read_selected(everywhere_of(user_id), every_one, actor=actor, reason=reason)
    except _NoneOfThem:
        return []


def forget_all_tail(memories: CommandMemories, people: PeopleStore, user_id: str, locale: str, everywhere: bool) -> str:
    """What a forget-all's answer adds about the person's "everywhere" memories: with everywhere:true
    they are forgotten too (a forget-all of the person's own scope, stamped like any); otherwise how
    many remain. "" when they have none."""
    left = len(read_everywhere(memories, user_id, actor=Actor.COMMAND, reason=FORGET_ALL_COUNT_REASON))
    if not left:
        return ""
    if everywhere:
        gone = forget_all(memories, everywhere_of(user_id), people)
        return "\n" + text("forget_all_everywhere_done", locale, count=len(gone))
    return "\n" + text("forget_all_everywhere_left", locale, count=left)
