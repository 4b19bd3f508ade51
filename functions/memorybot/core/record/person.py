"""The person as a whole: one record everywhere the bot knows them (the memory switch, the
first-use notice, and the markers that make forgetting final), and the check every write of their
data commits under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from .terms import Message, iso

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
    # (scope, time) the last forget-all's deletion job finished there; a scope in ``forgetting``
    # has one running (no time yet). A record from before the job kept neither: done when it began.
    forgot_all_done: tuple[tuple[str, datetime], ...] = ()
    forgetting: frozenset[str] = frozenset()
    receipts: bool = True  # /memory receipts: a turn that changed their memories tells them so

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def recorded(self) -> bool:
        """Holds anything of the person's own (an erasure's marker alone is not theirs)."""
        return (
            self.paused_at is not None
            or self.resumed_at is not None
            or bool(self.noticed)
            or bool(self.forgot_all_at)
            or not self.receipts
        )

    def forgot_all_in(self, scope: str) -> datetime | None:
        return dict(self.forgot_all_at).get(scope)

    def forgot_all_done_in(self, scope: str) -> datetime | None:
        """When the last forget-all in ``scope`` had deleted everything (None while it runs)."""
        if scope in self.forgetting:
            return None
        return dict(self.forgot_all_done).get(scope) or self.forgot_all_in(scope)

    def learnable(self, messages: Sequence[Message], scope: str = "") -> list[Message]:
        """The messages that may still teach: none while paused; after a resume, only what was
        said after it (resuming does not reach back); nothing said before an erasure, nor (in
        ``scope``) at or before the last forget-all there: it was final for everything said before it."""
        if self.paused:
            return []
        stamps = (self.resumed_at, self.erased_at, self.forgot_all_in(scope) if scope else None)
        floor = max((t for t in stamps if t is not None), default=None)
        return [m for m in messages if floor is None or m.created_at > floor]


class Basis(str, Enum):
    """What a write of a person's data rests on, so what their record must allow."""

    STORE = "store"  # a line of their conversation, stored by a job that started at ``since``
    LEARN = "learn"  # a memory learned from lines said from ``since`` on (in ``scope``)
    # A memory state put back (a rollback, an Undo); ``since``: when the change being reverted
    # happened (the ledger row's own time, the store's clock), never a stamp the state carries.
    RESTORE = "restore"
    IMPORT = "import"  # a memory brought in by an import that began at ``since`` (in ``scope``)


@dataclass(frozen=True)
class PersonCheck:
    """The condition a write commits under, in the same transaction, on the person's record.

    Every kind: no erasure at or after ``since`` (nothing in flight writes for a person after their
    erasure). LEARN also: not paused, no resume at or after ``since`` (nothing said while paused
    is learned later), and no forget-all in ``scope`` at or after ``since`` (nothing said before
    one is learned, by a turn in flight either). IMPORT also: no forget-all in ``scope`` since the
    import began. RESTORE also: in ``scope``, no forget-all running, and the last one (begun and
    finished) before ``since``: a state that stopped being current before the forget-all had
    deleted everything existed when it ran (or was deleted by it), whatever its own stamps say."""

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
            return person.paused_at is None and before(person.resumed_at) and before(person.forgot_all_in(self.scope))
        if self.basis is Basis.IMPORT:
            return before(person.forgot_all_in(self.scope))
        if self.basis is Basis.RESTORE:
            if self.scope in person.forgetting:
                return False
            return before(person.forgot_all_in(self.scope)) and before(person.forgot_all_done_in(self.scope))
        return True
