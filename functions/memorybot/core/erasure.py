"""Erasure for operators (``POST /memory/erase``, read by ``admin_api``): one person, every scope.

First marks the person erased (their record keeps only ``erased_at``: the memory switch and the
notices go), so that nothing already in flight for them writes after this point: every writer
checks that marker in its own transaction (``domain.PersonCheck``). Then deletes the person's
memories in every scope (each delete with its ledger row, written without text) and the record
of which of their messages they had forgotten, deletes their stored messages (their own lines
and the bot's replies to them), and redacts the text of their ledger rows: before/after go, the
skeleton (ids, actions, actors, times, source message ids) stays. Then one row of its own records
the erasure. (Dropping the forgotten record cannot let a forgotten message teach again: the
messages it names are deleted too.)

A later rollback cannot restore what was erased: it skips redacted rows and says so.
Answers carry counts and ids only, never text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from .domain import PERSON_SCOPE, Action, Actor, Change, LedgerEntry, Owner, utcnow
from .ports import ConflictError, MemoryStore, MessageStore, PeopleStore

logger = logging.getLogger(__name__)

ERASURE_SCOPE = "erasure"  # the erasure's own row: Owner(ERASURE_SCOPE, user).key, never a real scope
DELETE_ATTEMPTS = 3


@dataclass(frozen=True)
class EraseRequest:
    user_id: str
    dry_run: bool = False


@dataclass(frozen=True)
class ErasureResult:
    found: bool
    user_id: str
    dry_run: bool = False
    memories: int = 0
    ledger_rows: int = 0
    messages: int = 0
    scopes: int = 0
    switch: bool = False  # the person record held their switch or notices


class Erasure:
    def __init__(
        self,
        memories: MemoryStore,
        messages: MessageStore,
        people: PeopleStore | None = None,
        *,
        clock: Callable = utcnow,
    ) -> None:
        self._memories = memories
        self._messages = messages
        self._people = people
        self._clock = clock

    def run(self, user_id: str, *, dry_run: bool = False) -> ErasureResult:
        switch = self._people is not None and self._people.get(user_id).recorded
        # The erasure's own rows and the switch's (pause, resume) hold no text and are no scope.
        owners = [
            o
            for o in self._memories.owners_of(user_id)
            if o.user_id == user_id and o.scope not in (ERASURE_SCOPE, PERSON_SCOPE)
        ]
        stored = self._messages.of_person(user_id)
        if not owners and not stored and not switch:
            return ErasureResult(False, user_id, dry_run)
        if not dry_run and self._people is not None:
            # First: from here on, a write that started before now is refused (its own transaction
            # checks the marker), so nothing in flight lands after the deletes below.
            self._people.erased(user_id, self._clock())
        memories = rows = 0
        for owner in owners:
            profile = self._memories.read_profile(owner, actor=Actor.OPERATOR, reason="erasure", limit=None)
            memories += len(profile)
            if not dry_run:
                for memory in profile:
                    self._delete(owner, memory.memory_id)
            # Read after the deletes: a consistent read of the owner's partition, every row.
            texts = [
                e for e in self._memories.ledger_for(owner, limit=None) if e.before is not None or e.after is not None
            ]
            rows += len(texts)
            if not dry_run:
                for entry in texts:
                    self._memories.redact(entry)
                self._memories.erase_forgotten_sources(owner)  # the ids of their forgotten memories' messages
        if not dry_run:
            # Read again: a line stored after the first look but before the marker is found now.
            stored = list(
                {(m.channel_id, m.message_id): m for m in stored + self._messages.of_person(user_id)}.values()
            )
            for message in stored:
                self._messages.delete(message)
        result = ErasureResult(True, user_id, dry_run, memories, rows, len(stored), len(owners), switch)
        if not dry_run:
            self._memories.record(
                LedgerEntry(
                    user_id,
                    Action.ERASE,
                    Actor.OPERATOR,
                    f"erasure: {memories} memories deleted, {rows} ledger rows redacted, "
                    f"{len(stored)} messages deleted",
                    self._clock(),
                    scope=ERASURE_SCOPE,
                )
            )
        logger.info(
            "erasure done",
            extra={
                "user_id": user_id,
                "dry_run": dry_run,
                "memories": memories,
                "ledger_rows": rows,
                "messages": len(stored),
            },
        )
        return result

    def _delete(self, owner: Owner, memory_id: str) -> None:
        for _ in range(DELETE_ATTEMPTS):
            current = self._memories.get(owner, memory_id)
            if current is None:
                return
            try:
                self._memories.apply(
                    Change(Action.DELETE, current, None, "erasure"), actor=Actor.OPERATOR, redacted=True
                )
                return
            except ConflictError:
                continue
        raise ConflictError(memory_id)
