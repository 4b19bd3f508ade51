"""Erasure for operators (``POST /memory/erase``, read by ``admin_api``): one person, every scope.

First marks the person erased (their record keeps only ``erased_at``: the memory switch and the
notices go), so that nothing already in flight for them writes after this point: every writer
checks that marker in its own transaction (``person.PersonCheck``). Then deletes the person's
memories in every scope (each delete with its ledger row, written without text) and the record
of which of their messages they had forgotten, deletes their stored messages (their own lines
and the bot's replies to them), and redacts the text of their ledger rows: before/after go, the
skeleton (ids, actions, actors, times, source message ids) stays; a record no reader can read
is deleted (or redacted) all the same. The person's scopes are looked up again after the marker,
until a look finds none not yet erased: a first memory in a new scope that committed just before
the marker is erased too. Then one row of its own records the erasure. (Dropping the forgotten
record cannot let a forgotten message teach again: the messages it names are deleted too.)

A later rollback cannot restore what was erased: it skips redacted rows and says so.
Answers carry counts and ids only, never text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..record.changes import Change, LedgerEntry
from ..record.domain import Action, Actor, Message, Owner, utcnow
from ..record.person import PERSON_SCOPE
from ..record.ports import (
    ConflictError,
    Erasing,
    Ledger,
    MemoryWriter,
    MessageStore,
    OvernightNotes,
    PeopleStore,
    ProfileReader,
)
from .servers import ServerStore, guild_of

logger = logging.getLogger(__name__)

ERASURE_SCOPE = "erasure"  # the erasure's own row: Owner(ERASURE_SCOPE, user).key, never a real scope
DELETE_ATTEMPTS = 3
# Looks at the person's scopes after the erasure's marker (each after a pass over what was found).
SCOPE_LOOKS = 3


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


@dataclass(frozen=True)
class _Erased:
    """What one pass erased (or, in a dry run, would erase)."""

    memories: int = 0
    ledger_rows: int = 0
    scopes: int = 0

    def __add__(self, other: _Erased) -> _Erased:
        return _Erased(self.memories + other.memories, self.ledger_rows + other.ledger_rows, self.scopes + other.scopes)


class ErasableMemories(ProfileReader, MemoryWriter, Ledger, Erasing, Protocol):
    """The roles of the memory store an erasure uses: every scope and memory of the person, their
    rows, and what only an erasure does."""


class Erasure:
    def __init__(
        self,
        memories: ErasableMemories,
        messages: MessageStore,
        people: PeopleStore | None = None,
        *,
        clock: Callable = utcnow,
        servers: ServerStore | None = None,
        overnight: OvernightNotes | None = None,  # the night's notes, erased with the rest
    ) -> None:
        self._servers = servers  # the servers' figures: the person no longer counted where they had memories
        self._memories = memories
        self._overnight = overnight
        self._messages = messages
        self._people = people
        self._clock = clock

    def run(self, user_id: str, *, dry_run: bool = False) -> ErasureResult:
        switch = self._people is not None and self._people.get(user_id).recorded
        owners = self._owners(user_id)
        stored = self._messages.of_person(user_id)
        if not owners and not stored and not switch:
            return ErasureResult(False, user_id, dry_run)
        if dry_run:
            erased, messages = sum(map(self._preview, owners), _Erased()), len(stored)
        else:
            erased, messages = self._erase(user_id, owners, stored)
        logger.info(
            "erasure done",
            extra={
                "user_id": user_id,
                "dry_run": dry_run,
                "memories": erased.memories,
                "ledger_rows": erased.ledger_rows,
                "messages": messages,
            },
        )
        return ErasureResult(
            True, user_id, dry_run, erased.memories, erased.ledger_rows, messages, erased.scopes, switch
        )

    def _owners(self, user_id: str) -> list[Owner]:
        # The erasure's own rows and the switch's (pause, resume) hold no text and are no scope.
        return [
            o
            for o in self._memories.owners_of(user_id)
            if o.user_id == user_id and o.scope not in (ERASURE_SCOPE, PERSON_SCOPE)
        ]

    def _erase(self, user_id: str, owners: list[Owner], stored: list[Message]) -> tuple[_Erased, int]:
        if self._people is not None:
            # First: from here on, a write that started before now is refused (its own transaction
            # checks the marker), so nothing in flight lands after the deletes below.
            self._people.erased(user_id, self._clock())
        erased, done, looks = _Erased(), set[Owner](), 0
        # The person's scopes come from an eventually consistent index, first read before the
        # marker: a first memory in a new scope that committed meanwhile may be missing from it.
        # So look again after the marker (and after each pass) until a look finds nothing new.
        while owners:
            for owner in owners:
                of_owner = self._erase_owner(owner)
                erased += of_owner
                done.add(owner)
                self._uncount(owner, of_owner.memories)
            if looks == SCOPE_LOOKS:
                break
            looks += 1
            owners = [o for o in self._owners(user_id) if o not in done]
        messages = self._erase_messages(user_id, stored)
        self._memories.record(
            LedgerEntry(
                user_id,
                Action.ERASE,
                Actor.OPERATOR,
                f"erasure: {erased.memories} memories deleted, {erased.ledger_rows} ledger rows redacted, "
                f"{messages} messages deleted",
                self._clock(),
                scope=ERASURE_SCOPE,
            )
        )
        return erased, messages

    def _uncount(self, owner: Owner, memories: int) -> None:
        """A server's figures without the person: no digest of them left in its count of people."""
        guild = guild_of(owner.scope)
        if self._servers is None or not guild:
            return
        try:
            self._servers.count(guild, self._clock().date(), memories=-memories)
            self._servers.count_person(guild, owner.user_id, has_memories=False)
        except Exception as exc:  # noqa: BLE001 - the erasure stands; the figures are a courtesy
            logger.warning("server figures not updated", extra={"error": type(exc).__name__})

    def _preview(self, owner: Owner) -> _Erased:
        profile = self._memories.read_profile(owner, actor=Actor.OPERATOR, reason="erasure", limit=None)
        return _Erased(len(profile), len(self._texts(owner)), 1)

    def _erase_owner(self, owner: Owner) -> _Erased:
        profile = self._memories.read_profile(owner, actor=Actor.OPERATOR, reason="erasure", limit=None)
        for memory in profile:
            self._delete(owner, memory.memory_id)
        # What no reader can read (so the profile above skipped) goes too.
        unreadable, unreadable_rows = self._memories.erase_unreadable(owner, actor=Actor.OPERATOR, reason="erasure")
        # Read after the deletes: a consistent read of the owner's partition, every row.
        texts = self._texts(owner)
        for entry in texts:
            self._memories.redact(entry)
        # the ids of their forgotten memories' messages, and what ranked their memories (their texts)
        self._memories.erase_kept_beside(owner)
        if self._overnight is not None:  # the night's note (ids of theirs), if not yet told
            self._overnight.clear_overnight(owner)
        return _Erased(len(profile) + unreadable, len(texts) + unreadable_rows, 1)

    def _texts(self, owner: Owner) -> list[LedgerEntry]:
        """The owner's ledger rows that hold memory text (a before or an after state)."""
        return [e for e in self._memories.ledger_for(owner, limit=None) if e.before is not None or e.after is not None]

    def _erase_messages(self, user_id: str, stored: list[Message]) -> int:
        # Read again: a line stored after the first look but before the marker is found now.
        every = {(m.channel_id, m.message_id): m for m in stored + self._messages.of_person(user_id)}
        for message in every.values():
            self._messages.delete(message)
        return len(every)

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
