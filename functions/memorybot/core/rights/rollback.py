"""Undo a nightly run: walk its ledger rows newest first and replay them in reverse.

- an add is deleted, only if the record is still exactly what the run wrote;
- an update is restored to its before state, under the same condition;
- a delete (decay ones included) is reinserted from its before state, only if the id is absent.
A record that changed again after the run is skipped: a later extraction or a user's
forget is never overwritten by an old rollback; and a state older than the person's later
forget-all in that scope (or their erasure) is never put back (``PersonCheck``, RESTORE, in the
same transaction as the revert). Each revert is one conditional
``MemoryWriter.apply`` (actor nightly, the run's id, action ``rollback``), so the change
and its ledger row commit together.

Exactly once: the rollback first takes the run's lease (``RunStore.claim_rollback``);
a second rollback meanwhile is refused (409). If a rollback dies half way, its lease
is released (or expires) and a retry walks the rows again: a row that the earlier
attempt already reverted is recognised by its rollback row (same record, before and
after swapped) and reported as reverted without being touched again, and the
rollback rows themselves are never reverted.

Answers carry memory ids only, never memory text.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Protocol

from ..record.changes import RUN_LEDGER_OWNER, Change, LedgerEntry
from ..record.domain import Action, Actor, Memory, Owner, utcnow
from ..record.person import Basis, Person, PersonCheck
from ..record.ports import ConflictError, MemoryWriter, PeopleStore, RollbackClaim, RunLedger, RunStore

logger = logging.getLogger(__name__)

# Longer than the admin function may run, so a live rollback never loses its lease;
# short enough that a retry after a crash is not kept waiting long.
ROLLBACK_LEASE = timedelta(minutes=2)
REVERSIBLE = (Action.ADD, Action.UPDATE, Action.DELETE)


class Outcome(str, Enum):
    DONE = "done"
    PREVIEW = "preview"
    NOT_FOUND = "not_found"
    ALREADY = "already_rolled_back"
    BUSY = "in_progress"


class RollbackMemories(MemoryWriter, RunLedger, Protocol):
    """The roles of the memory store a rollback uses: the run's rows, and the changes undoing them."""


@dataclass(frozen=True)
class RollbackResult:
    outcome: Outcome
    run_id: int | None = None
    reverted: list[str] = field(default_factory=list)  # memory ids
    skipped: list[str] = field(default_factory=list)  # memory ids
    erased: list[str] = field(
        default_factory=list
    )  # memory ids whose rows an erasure redacted: skipped, not restorable


class Rollback:
    def __init__(
        self,
        memories: RollbackMemories,
        runs: RunStore,
        *,
        clock: Callable[[], datetime] = utcnow,
        new_owner: Callable[[], str] = lambda: secrets.token_hex(8),
        lease: timedelta = ROLLBACK_LEASE,
        people: PeopleStore | None = None,  # read by a dry run, so its preview skips what the check would refuse
    ) -> None:
        self._people = people
        self._memories = memories
        self._runs = runs
        self._clock = clock
        self._new_owner = new_owner
        self._lease = lease

    def run(self, run_id: int | None = None, *, dry_run: bool = False) -> RollbackResult:
        """Roll back run ``run_id`` (the latest when None); ``dry_run`` only previews."""
        run = self._runs.latest() if run_id is None else self._runs.get(run_id)
        if run is None:
            return RollbackResult(Outcome.NOT_FOUND, run_id)
        if run.rolled_back:
            return RollbackResult(Outcome.ALREADY, run.run_id)
        if run.in_progress(self._clock()):
            # Still writing: rows it adds after our walk would escape the rollback.
            return RollbackResult(Outcome.BUSY, run.run_id)
        if dry_run:
            reverted, skipped, erased = self._replay(run.run_id, apply=False)
            return RollbackResult(Outcome.PREVIEW, run.run_id, reverted, skipped, erased)

        owner = self._new_owner()
        try:
            claim = self._runs.claim_rollback(run.run_id, owner, self._clock(), self._lease)
        except BaseException:
            self._give_back(run.run_id, owner)  # the claim may have committed without an answer
            raise
        if claim is not RollbackClaim.CLAIMED:
            outcome = {RollbackClaim.MISSING: Outcome.NOT_FOUND, RollbackClaim.DONE: Outcome.ALREADY}.get(
                claim, Outcome.BUSY
            )
            return RollbackResult(outcome, run.run_id)
        try:
            reverted, skipped, erased = self._replay(run.run_id, apply=True)
            counts = {"reverted": len(reverted), "skipped": len(skipped)}
            # The rollback's own row: its time and counts, even when it reverted nothing.
            row = LedgerEntry(
                RUN_LEDGER_OWNER,
                Action.ROLLBACK,
                Actor.NIGHTLY,
                f"rollback of nightly run {run.run_id}: {counts['reverted']} reverted, {counts['skipped']} skipped",
                self._clock(),
                run_id=run.run_id,
            )
            marked = self._runs.mark_rolled_back(run.run_id, owner, row, counts)
        except BaseException:
            # Everything applied so far is committed with its ledger row; giving the lease back
            # lets an immediate retry finish (or find the run already marked).
            self._give_back(run.run_id, owner)
            logger.warning("rollback interrupted", extra={"run_id": run.run_id})
            raise
        if not marked:
            # Only if this took longer than the lease and another rollback took over;
            # every step was conditional, so nothing was applied twice.
            logger.warning("rollback lease lost before marking", extra={"run_id": run.run_id})
        logger.info("rollback done", extra={"run_id": run.run_id, "reverted": len(reverted), "skipped": len(skipped)})
        return RollbackResult(Outcome.DONE, run.run_id, reverted, skipped, erased)

    def _give_back(self, run_id: int, owner: str) -> None:
        try:
            self._runs.release_rollback(run_id, owner)  # a no-op unless ``owner`` holds the lease
        except Exception:  # noqa: BLE001 - the lease expires anyway
            logger.warning("rollback lease not released", extra={"run_id": run_id})

    def _replay(self, run_id: int, *, apply: bool) -> tuple[list[str], list[str], list[str]]:
        entries = self._memories.ledger_for_run(run_id)  # newest first
        # What an earlier, interrupted attempt already reverted: rollback rows are the
        # originals with before and after swapped.
        undone = Counter(
            _signature(e.owner, e.memory_ids, e.after, e.before) for e in entries if e.action is Action.ROLLBACK
        )
        simulated: dict[tuple[Owner, str], Memory | None] = {}  # dry run: the state each revert would leave
        persons: dict[str, Person] = {}  # dry run: the records its checks would read, once each
        # Once a record is found changed since the run, its older rows are left alone too:
        # reverting them would step over the later change (e.g. re-add what a user forgot).
        blocked: set[tuple[Owner, str]] = set()
        reverted: list[str] = []
        skipped: list[str] = []
        erased: list[str] = []
        for entry in entries:
            if entry.action not in REVERSIBLE or not entry.memory_ids:
                continue  # reads, and the rollback's own rows
            memory_id = entry.memory_ids[0]
            if entry.redacted:
                # An erasure removed its text: nothing to restore from, and nothing should be.
                erased.append(memory_id)
                blocked.add((entry.owner, memory_id))
                continue
            signature = _signature(entry.owner, entry.memory_ids, entry.before, entry.after)
            if undone[signature] > 0:
                undone[signature] -= 1
                reverted.append(memory_id)
                continue
            key = (entry.owner, memory_id)
            if key in blocked:
                skipped.append(memory_id)
                continue
            current = simulated[key] if key in simulated else self._memories.get(*key)
            change = reversal(entry, current, f"rollback of nightly run {run_id}")
            if change is None:
                blocked.add(key)
                skipped.append(memory_id)
                continue
            if not apply:
                if not self._would_allow(entry, change, persons):
                    blocked.add(key)
                    skipped.append(memory_id)
                    continue
                simulated[key] = change.after
                reverted.append(memory_id)
                continue
            try:
                self._memories.apply(
                    change,
                    actor=Actor.NIGHTLY,
                    run_id=run_id,
                    ledger_action=Action.ROLLBACK,
                    check=restoring(entry, change),
                )
            except ConflictError:  # changed between our read and the write, or the person forgot it since: leave it
                blocked.add(key)
                skipped.append(memory_id)
                continue
            reverted.append(memory_id)
        return _unique(reverted), _unique(skipped), _unique(erased)

    def _would_allow(self, entry: LedgerEntry, change: Change, persons: dict[str, Person]) -> bool:
        """What the write's person check would answer (a dry run writes nothing, so it asks)."""
        check = restoring(entry, change)
        if check is None or self._people is None:
            return True
        if check.user_id not in persons:
            persons[check.user_id] = self._people.get(check.user_id)
        return check.allows(persons[check.user_id])


def reversal(entry: LedgerEntry, current: Memory | None, reason: str) -> Change | None:
    """The change that undoes ``entry`` (by its shape: an add has no before, a delete no after),
    or None if the record changed again since: the rollback's rule, and ``/memory history``'s Undo.

    - an add is deleted, only if the record is still exactly what the add wrote;
    - an update is restored to its before state, under the same condition;
    - a delete is reinserted from its before state, only if the id is absent."""
    if entry.redacted:
        return None
    if entry.before is None:
        return Change(Action.DELETE, current, None, reason) if current is not None and current == entry.after else None
    if entry.after is None:
        return Change(Action.ADD, None, entry.before, reason) if current is None else None
    if current is None or current != entry.after:
        return None
    return Change(Action.UPDATE, current, entry.before, reason)


def restoring(entry: LedgerEntry, change: Change) -> PersonCheck | None:
    """A revert of ``entry`` that puts a memory state back is conditioned on the person's record:
    nothing it restores was current at or after their later erasure or forget-all in that scope
    (a delete needs no check). Judged by when ``entry`` happened (the ledger row's time, the
    store's own clock), when the state stopped being current, never by the state's
    ``updated_at``: a stamp the state carries (an import's, up to the accepted skew ahead of the
    clock) says nothing about when it was really there."""
    if change.after is None:
        return None
    return PersonCheck(change.user_id, entry.at, Basis.RESTORE, change.owner.scope)


def _signature(owner: Owner, memory_ids: tuple[str, ...], before: Memory | None, after: Memory | None) -> tuple:
    return (owner, memory_ids[:1], before, after)


def _unique(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


# ---- the operator's request (``admin_api`` reads it from HTTP)


@dataclass(frozen=True)
class RollbackRequest:
    run_id: int | None = None  # None: the latest run
    dry_run: bool = False
