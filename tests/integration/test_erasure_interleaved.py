"""Erasure is complete whatever commits meanwhile, against moto's DynamoDB server.

The person's scopes come from the ``by_user`` indexes, which DynamoDB keeps eventually
consistent (moto's are immediate). Here the first look at them is made to interleave with a
live extraction's first memory in a new scope: it commits just after the look, before the
erasure's marker, and the look does not show it yet (as a lagging index would not). The
erasure must find and delete it all the same.
"""

from __future__ import annotations

from datetime import timedelta

from fakes import T0, Clock
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.dynamodb_people import DynamoPeopleStore
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory, Owner
from memorybot.core.record.person import Basis, PersonCheck
from memorybot.core.rights.erasure import Erasure

USER = "424242424242424242"
OLD_SCOPE, NEW_SCOPE = "guild:1000000000000000001", "guild:1000000000000000002"


class LaggingIndex(DynamoMemoryStore):
    """The first ``owners_of`` interleaves with a commit in a new scope it does not see yet."""

    def __init__(self, *args, commit, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._commit = commit
        self.looks = 0

    def owners_of(self, user_id):
        self.looks += 1
        seen = super().owners_of(user_id)
        if self.looks == 1:
            self._commit()  # commits now; this look was read before it reached the index
        return seen


def test_a_first_memory_in_a_new_scope_committed_during_the_erasure_is_erased_too(dynamo):
    client, settings = dynamo
    clock = Clock(T0 + timedelta(hours=1))
    people = DynamoPeopleStore(client, settings)

    def first_memory_in_a_new_scope() -> None:
        # A live extraction whose exchange began before the erasure: its check lets it commit.
        fresh = Memory(USER, "new22", "Plays the koto", T0, T0, scope=NEW_SCOPE)
        store.apply(
            Change(Action.ADD, None, fresh, "jev: add"),
            actor=Actor.EXTRACTION,
            check=PersonCheck(USER, T0, Basis.LEARN),
        )

    store = LaggingIndex(client, settings, clock=clock, commit=first_memory_in_a_new_scope)
    store.apply(
        Change(Action.ADD, None, Memory(USER, "old22", "Likes tea", T0, T0, scope=OLD_SCOPE), "jev: add"),
        actor=Actor.EXTRACTION,
    )

    result = Erasure(store, DynamoMessageStore(client, settings), people, clock=clock).run(USER)

    assert result.found and result.scopes == 2 and result.memories == 2, result
    assert store.looks >= 2  # looked again after its marker
    plain = DynamoMemoryStore(client, settings, clock=clock)
    for scope in (OLD_SCOPE, NEW_SCOPE):
        owner = Owner(scope, USER)
        assert plain.read_profile(owner, actor=Actor.OPERATOR, reason="test", limit=None) == []
        assert all(e.before is None and e.after is None for e in plain.ledger_for(owner, limit=None))
