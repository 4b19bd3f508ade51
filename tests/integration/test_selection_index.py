"""The selection index against moto's DynamoDB server: it agrees with the memories after every
write path (extraction's add, update and vector, the nightly run's changes and decay, forget,
forget-all, a move between scopes, an import and its take-back, a rollback's or an Undo's restore, the erasure of
unreadable records, the erasure itself, which removes it), a large profile's selection from it chooses the same memories
as one from the whole profile, and an index missing (memories written before it existed) is built
by the extraction's read, never by the reply's, and never from a read that a write overtook."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta

import pytest

from fakes import T0, Clock, owner
from memorybot import tables
from memorybot.adapters import profile_index
from memorybot.adapters.dynamodb_memories import SMALL_PROFILE_ITEMS, DynamoMemoryStore, memory_key
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.dynamodb_people import DynamoPeopleStore
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.core.prompting.selection import select
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory, Owner, SourceRef
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure

ALICE = owner("alice")
EMBEDDINGS = OfflineEmbeddingModel()
TOPICS = [
    "hiking in the Alps every summer",
    "a sister called Mina who lives in Osaka",
    "works as a nurse on night shifts",
    "allergic to peanuts",
    "learning the cello since March",
    "大阪に住んでいる妹がいる",
    "毎朝コーヒーを二杯飲む",
    "a cat named Sesame",
    "training for the Kyoto marathon",
    "prefers green tea to coffee",
]
QUERIES = ["how is your sister doing in Osaka?", "any hikes planned?", "妹は元気？", "what should I cook, peanuts?", ""]


def _id(i: int) -> str:
    alphabet = "23456789abcdefghjkmnpqrstuvwxyz"
    return "".join(alphabet[(i // 31**k) % 31] for k in range(5))


def seeded(n: int, who: Owner = ALICE) -> list[Memory]:
    """``n`` memories: most with a vector, every third without one, some with an end (past or not)."""
    out = []
    for i in range(n):
        text = f"{TOPICS[i % len(TOPICS)]} (note {i})"
        at = T0 - timedelta(hours=n - i)
        m = Memory(
            who.user_id,
            _id(i),
            text,
            at,
            at,
            scope=who.scope,
            sources=(SourceRef("c1", str(1000 + i)),),
            valid_until=date(2026, 11, 1 + i % 28) if i % 7 == 0 else None,
        )
        if i % 3:
            m = dataclasses.replace(m, embedding=EMBEDDINGS.embed_one(text))
        out.append(m)
    return out


def newest(profile: list[Memory]) -> list[Memory]:
    return select(profile, "")


@pytest.fixture
def store(dynamo):
    client, settings = dynamo
    return DynamoMemoryStore(client, settings, clock=Clock(T0 + timedelta(days=1)))


def fill(store: DynamoMemoryStore, memories: list[Memory]) -> None:
    for m in memories:
        store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)


def index_of(store: DynamoMemoryStore, who: Owner = ALICE) -> profile_index.Index:
    header = store._client.get_item(
        TableName=store._memories, Key=memory_key(who, profile_index.HEADER_KEY), ConsistentRead=True
    ).get("Item")
    return store._index(who, header)


def ranked_view(m: Memory) -> tuple:
    """What ranking reads of a memory: all of it but its sources and review mark."""
    return (m.memory_id, m.text, m.created_at, m.updated_at, m.valid_until, m.embedding)


def assert_index_agrees(store: DynamoMemoryStore, who: Owner = ALICE) -> None:
    index = index_of(store, who)
    profile = store.read_profile(who, actor=Actor.OPERATOR, reason="check", limit=None)
    assert index.version is not None  # every write bumps it
    assert sorted(map(ranked_view, index.memories())) == sorted(map(ranked_view, profile))


def raw_items(dynamo, who: Owner = ALICE) -> list[dict]:
    client, settings = dynamo
    return client.query(
        TableName=settings.table(tables.MEMORIES),
        KeyConditionExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": {"S": who.key}},
        ConsistentRead=True,
    )["Items"]


# ---- every write path keeps the index in step --------------------------------------------------


def test_the_index_agrees_with_the_memories_after_every_write_path(store, dynamo):
    memories = seeded(40)
    fill(store, memories[:30])  # extraction's adds (live or nightly: the same apply)
    assert_index_agrees(store)

    # An update drops the old text's vector; then the extraction stores the new text's vector.
    old = store.get(ALICE, memories[1].memory_id)
    new = dataclasses.replace(old, text="climbing in the Alps now", updated_at=old.updated_at + timedelta(days=2))
    store.apply(Change(Action.UPDATE, old, dataclasses.replace(new, embedding=None), "jev"), actor=Actor.NIGHTLY)
    assert_index_agrees(store)
    assert store.set_embedding(new, EMBEDDINGS.embed_one(new.text))
    assert_index_agrees(store)
    # A vector onto a record changed since is refused: neither the memory nor its entry take it.
    assert not store.set_embedding(old, EMBEDDINGS.embed_one(old.text))
    assert_index_agrees(store)

    # The nightly decay, a forget (the person's command), an Undo or rollback putting one back.
    decayed = store.get(ALICE, memories[2].memory_id)
    store.apply(Change(Action.DELETE, decayed, None, "decay"), actor=Actor.NIGHTLY, run_id=7)
    assert commands.forget(store, ALICE, memories[3].memory_id).outcome is commands.ForgetOutcome.FORGOTTEN
    assert_index_agrees(store)
    store.apply(Change(Action.ADD, None, decayed, "rollback of run 7"), actor=Actor.OPERATOR, run_id=7)
    assert_index_agrees(store)

    # An import row (the memory with its marker, once), and one taken back (its request failed later).
    added = [store.add_once(m, f"import:{m.memory_id}", actor=Actor.OPERATOR, reason="import") for m in memories[30:]]
    assert store.add_once(memories[30], f"import:{memories[30].memory_id}", actor=Actor.OPERATOR, reason="i") is None
    assert_index_agrees(store)
    assert added[-1] is not None and store.take_back(added[-1], f"import:{memories[-1].memory_id}", reason="failed")
    assert memories[-1].memory_id not in {m.memory_id for m in index_of(store).memories()}
    assert_index_agrees(store)

    # A record no reader can read is erased with its entry.
    client, settings = dynamo
    client.update_item(
        TableName=settings.table(tables.MEMORIES),
        Key=memory_key(ALICE, memories[5].memory_id),
        UpdateExpression="SET updated_at = :bad",
        ExpressionAttributeValues={":bad": {"S": "not a time"}},
    )
    assert store.erase_unreadable(ALICE, actor=Actor.OPERATOR, reason="erasure")[0] == 1
    assert memories[5].memory_id not in {m.memory_id for m in index_of(store).memories()}

    # A move to the person's "everywhere" scope: its entry leaves this index and joins that one.
    moving = store.get(ALICE, memories[6].memory_id)
    moved = dataclasses.replace(moving, scope="everywhere", updated_at=moving.updated_at + timedelta(days=3))
    store.apply(Change(Action.MOVE, moving, moved, "memory everywhere"), actor=Actor.COMMAND)
    assert moving.memory_id not in {m.memory_id for m in index_of(store).memories()}
    assert [m.memory_id for m in index_of(store, moved.owner).memories()] == [moving.memory_id]
    assert_index_agrees(store)
    assert_index_agrees(store, moved.owner)

    # Forget-all: every memory goes, and every entry with it.
    assert commands.forget_all(store, ALICE)
    assert index_of(store).memories() == []
    assert_index_agrees(store)


def test_another_owner_and_another_scope_have_their_own_index(store):
    fill(store, seeded(5))
    bob, alice_dm = owner("bob"), owner("alice", "dm:1")
    fill(store, seeded(3, bob))
    fill(store, seeded(2, alice_dm))
    assert [len(index_of(store, o).memories()) for o in (ALICE, bob, alice_dm)] == [5, 3, 2]
    for o in (ALICE, bob, alice_dm):
        assert_index_agrees(store, o)
        assert {m.owner for m in index_of(store, o).memories()} == {o}


def test_the_erasure_removes_the_index_with_the_memories(store, dynamo):
    client, settings = dynamo
    fill(store, seeded(SMALL_PROFILE_ITEMS + 5))
    assert any(i["memory_id"]["S"].startswith(profile_index.CHUNK_PREFIX) for i in raw_items(dynamo))

    result = Erasure(store, DynamoMessageStore(client, settings)).run("alice")

    assert result.memories == SMALL_PROFILE_ITEMS + 5
    assert raw_items(dynamo) == []  # no memory, no index header, no chunk with a text in it


# ---- the same ten, read cheaper ------------------------------------------------------------


def test_a_large_profile_chooses_from_the_index_the_same_memories_as_from_the_whole_profile(store, dynamo):
    memories = seeded(150)
    fill(store, memories)
    whole = store.read_profile(ALICE, actor=Actor.OPERATOR, reason="check", limit=None)
    assert not index_of(store).complete  # written, never read by a function that builds it
    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")  # reads whole, builds
    assert index_of(store).complete
    today = date(2026, 11, 15)
    calls: list[str] = []
    store._client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))

    for query in QUERIES:
        vector = EMBEDDINGS.embed_one(query) if query else None

        def choose(profile: list[Memory], query=query, vector=vector) -> list[Memory]:
            usable = [m for m in profile if not m.ended(today)]
            return select(usable, query, query_embedding=vector)

        expected = choose(whole)
        # The extraction gets the records themselves (sources too), fetched after the ranking.
        store._cache.evict(ALICE.key)  # as a function that has not read it yet
        calls.clear()
        chosen = store.read_selected(ALICE, choose, actor=Actor.EXTRACTION, reason="extraction")
        assert chosen == expected and [m.memory_id for m in chosen] == [m.memory_id for m in expected]
        assert [m.embedding for m in chosen] == [m.embedding for m in expected]
        assert calls == ["Query", "Query", "BatchGetItem", "PutItem"]  # a page, the index, the ten, the read row
        [read_row] = store.ledger_for(ALICE, limit=1)
        assert read_row.memory_ids == tuple(m.memory_id for m in expected)
        # The reply: the same ten as their entries hold them (all its prompt reads), no fetch; the
        # index kept from the read before (the header alone says it is unchanged).
        calls.clear()
        chosen = store.read_selected(ALICE, choose, actor=Actor.REPLY, reason="reply prompt")
        assert list(map(ranked_view, chosen)) == list(map(ranked_view, expected))
        assert calls == ["GetItem", "PutItem"]
        [read_row] = store.ledger_for(ALICE, limit=1)
        assert read_row.memory_ids == tuple(m.memory_id for m in expected)


def test_a_small_profile_is_one_query_as_before_and_the_extractions_builds_its_index_from_it(store):
    fill(store, seeded(8))
    calls: list[str] = []
    store._client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))

    chosen = store.read_selected(ALICE, lambda p: select(p, "tea"), actor=Actor.REPLY, reason="reply prompt")
    assert len(chosen) == 8 and calls == ["Query", "PutItem"]
    assert not index_of(store).complete

    calls.clear()
    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert calls == ["Query", "TransactWriteItems", "PutItem"]  # the page, the index from it, the read row
    assert index_of(store).complete
    assert_index_agrees(store)

    calls.clear()
    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert calls == ["Query", "PutItem"]  # built once
    fill(store, seeded(SMALL_PROFILE_ITEMS + 3)[8:])  # it grows: every write keeps the index
    assert_index_agrees(store)
    calls.clear()
    assert len(store.read_selected(ALICE, newest, actor=Actor.REPLY, reason="reply prompt")) == 10
    assert calls == ["Query", "Query", "PutItem"]  # the reply's ten as their entries hold them


# ---- an index missing: built by the extraction's read, from a read nothing overtook -------------


def without_index(dynamo, who: Owner = ALICE) -> None:
    """As memories written before the index existed: the same memories, no index items."""
    client, settings = dynamo
    for item in raw_items(dynamo, who):
        if item["memory_id"]["S"].startswith((profile_index.HEADER_KEY, profile_index.CHUNK_PREFIX)):
            client.delete_item(TableName=settings.table(tables.MEMORIES), Key=memory_key(who, item["memory_id"]["S"]))


def test_a_missing_index_is_built_by_the_extractions_read_and_not_by_the_replys(store, dynamo):
    memories = seeded(60)
    fill(store, memories)
    without_index(dynamo)

    store.read_selected(ALICE, newest, actor=Actor.REPLY, reason="reply prompt")
    assert index_of(store).version is None and index_of(store).memories() == []  # the reply only reads

    first = store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert index_of(store).complete
    assert_index_agrees(store)
    again = store.read_selected(ALICE, newest, actor=Actor.REPLY, reason="reply prompt")
    assert list(map(ranked_view, again)) == list(map(ranked_view, first))


class Overtaken(DynamoMemoryStore):
    """A store whose whole read is overtaken by a write (another function's) before it builds."""

    write: Change | None = None

    def _whole_profile(self, who: Owner) -> list[Memory]:
        profile = super()._whole_profile(who)
        if self.write is not None:
            change, self.write = self.write, None
            self.apply(change, actor=Actor.EXTRACTION)
        return profile


def test_an_index_is_never_built_from_a_read_that_a_write_overtook(dynamo):
    client, settings = dynamo
    store = Overtaken(client, settings, clock=Clock(T0 + timedelta(days=1)))
    memories = seeded(60)
    fill(store, memories)
    without_index(dynamo)
    gone = store.get(ALICE, memories[0].memory_id)
    store.write = Change(Action.DELETE, gone, None, "forget")

    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")

    assert not index_of(store).complete  # the build was refused: it would hold the forgotten memory
    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert index_of(store).complete
    assert_index_agrees(store)
    assert gone.memory_id not in {m.memory_id for m in index_of(store).memories()}


def test_an_erasure_between_the_read_and_the_build_leaves_no_index(dynamo):
    client, settings = dynamo
    clock = Clock(T0 + timedelta(days=1))
    store = Overtaken(client, settings, clock=clock)
    fill(store, seeded(60))
    without_index(dynamo)
    people = DynamoPeopleStore(client, settings)

    def erase(who: Owner) -> list[Memory]:
        profile = DynamoMemoryStore._whole_profile(store, who)
        erasure = Erasure(
            DynamoMemoryStore(client, settings, clock=clock), DynamoMessageStore(client, settings), people
        )
        erasure.run("alice")
        return profile

    store._whole_profile = erase  # type: ignore[method-assign]
    store.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")

    assert [i for i in raw_items(dynamo) if "memory_id" in i and i["memory_id"]["S"] != "#forgotten"] == []
