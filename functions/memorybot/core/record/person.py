"""The person as a whole: one record everywhere the bot knows them (the memory switch, the
first-use notice, and the markers that make forgetting final), and the check every write of their
data commits under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from .domain import Message, iso

# The ledger scope of rows about the person rather than one profile (pause, resume): never a real scope.
PERSON_SCOPE = "person"


@dataclass(frozen=True)
class Person:
    """What the bot holds about a person as a whole. A person it never recorded is all defaults."""

    user_id: str
    paused_at: datetime | None = None  # set while memory is paused
    resumed_at: datetime | None = None  # the last resume: nothing said before it is learned
    noticed: frozenset[str] = frozenset()  # scopes where the first-use notice was given
    erased_at: datetime | None = None  # the operator's last erasure
    forgot_all_at: tuple[tuple[str, datetime], ...] = ()  # (scope, time) of each scope's last forget-all

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def recorded(self) -> bool:
        """Holds anything of the person's own (an erasure's marker alone is not theirs)."""
        return (
            self.paused_at is not None or self.resumed_at is not None or bool(self.noticed) or bool(self.forgot_all_at)
        )

    def forgot_all_in(self, scope: str) -> datetime | None:
        return dict(self.forgot_all_at).get(scope)

    def learnable(self, messages: Sequence[Message]) -> list[Message]:
        """The messages that may still teach: none while paused; after a resume, only what was
        said after it (resuming does not reach back); nothing said before an erasure."""
        if self.paused:
            return []
        floor = max((t for t in (self.resumed_at, self.erased_at) if t is not None), default=None)
        return [m for m in messages if floor is None or m.created_at > floor]


class Basis(str, Enum):
    """What a write of a person's data rests on, so what their record must allow."""

    STORE = "store"  # a line of their conversation, stored by a job that started at ``since``
    LEARN = "learn"  # a memory learned from lines said from ``since`` on
    RESTORE = "restore"  # a memory state (last written at ``since``) put back by a rollback


@dataclass(frozen=True)
class PersonCheck:
    """The condition a write commits under, in the same transaction, on the person's record.

    Every kind: no erasure at or after ``since`` (nothing in flight writes for a person after their
    erasure). LEARN also: not paused, and no resume at or after ``since`` (nothing said while paused
    is learned later). RESTORE also: no forget-all in ``scope`` at or after ``since`` (a rollback
    never puts back what the person later asked to forget)."""

    user_id: str
    since: datetime
    basis: Basis
    scope: str = ""

    def allows(self, person: Person) -> bool:
        """The rule as the store's condition expression states it (the fakes use this)."""

        def before(at: datetime | None) -> bool:
            return at is None or iso(at) < iso(self.since)

        if not before(person.erased_at):
            return False
        if self.basis is Basis.LEARN:
            return person.paused_at is None and before(person.resumed_at)
        if self.basis is Basis.RESTORE:
            return before(person.forgot_all_in(self.scope))
        return True
