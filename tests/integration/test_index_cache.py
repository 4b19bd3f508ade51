"""A warm function's copy of the selection indexes it read (adapters/index_cache.py), against moto's
DynamoDB server: a read with nothing changed since is one GetItem of the header (no chunk read);
a change (by another function: another store, another process; or by the same one) makes the next
read read again the one chunk it changed, and see it; an erasure drops the copy, and a profile written again after it is never
mistaken for the erased one; the ten are the ten a whole-profile read chooses; the bound drops
the least recently used owner first; 0 keeps nothing."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta

import pytest
from test_selection_index import ALICE, EMBEDDINGS, QUERIES, fill, index_of, newest, ranked_view, seeded

from fakes import T0, Clock, owner
from memorybot.adapters import profile_index, vectors
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.index_cache import footprint
from memorybot.core.prompting.selection import select
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Embedding, Memory, Owner
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure

BOB, CAROL = owner("bob"), owner("carol")
CLOCK = Clock(T0 + timedelta(days=1))


def a_store(dynamo, capacity: int | None = None) -> DynamoMemoryStore:
    """A function's store (each its own process: its own copy of the indexes)."""
    client, settings = dynamo
    if capacity is not None:
        settings = dataclasses.replace(settings, index_cache_bytes=capacity)
    return DynamoMemoryStore(client, settings, clock=CLOCK)


def calls_of(store: DynamoMemoryStore) -> list[str]:
    calls: list[str] = []
    store._client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    return calls


def chunks_fetched(store: DynamoMemoryStore) -> list[list[str]]:
    """The sort keys of each BatchGetItem the store sends."""
    fetched: list[list[str]] = []

    def record(params, **_) -> None:
        for request in params["RequestItems"].values():
            fetched.append([key["memory_id"]["S"] for key in request["Keys"]])

    store._client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", record)
    return fetched


def large(dynamo, who: Owner = ALICE, n: int = 40) -> list[Memory]:
    """``n`` memories of ``who`` and their index built (by an extraction's read), in another function."""
    writer = a_store(dynamo)
    memories = seeded(n, who)
    fill(writer, memories)
    writer.read_selected(who, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert index_of(writer, who).complete
    return memories


def reply_read(store: DynamoMemoryStore, choose=newest, who: Owner = ALICE) -> list[Memory]:
    return store.read_selected(who, choose, actor=Actor.REPLY, reason="reply prompt")


def test_a_second_read_with_nothing_changed_is_one_get_of_the_header(dynamo):
    large(dynamo)
    reply = a_store(dynamo)
    calls = calls_of(reply)

    first = reply_read(reply)
    assert calls == ["Query", "Query", "PutItem"]  # a page, the index (kept), the read row
    calls.clear()
    second = reply_read(reply)
    assert calls == ["GetItem", "PutItem"]  # the header alone, the read row: no chunk read
    assert list(map(ranked_view, second)) == list(map(ranked_view, first))
    [row] = reply.ledger_for(ALICE, limit=1)
    assert row.memory_ids == tuple(m.memory_id for m in second)

    # The extraction's read ranks from the kept copy too; it fetches its ten (it needs their sources).
    calls.clear()
    records = reply.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    assert calls == ["GetItem", "BatchGetItem", "PutItem"]
    assert len(records) == 10 and all(m.sources for m in records)


def test_a_change_by_another_function_makes_the_next_read_read_its_chunk_again_and_see_it(dynamo):
    memories = large(dynamo)
    reply, other = a_store(dynamo), a_store(dynamo)
    before = reply_read(reply)
    calls, fetched = calls_of(reply), chunks_fetched(reply)

    # Another function forgets the newest memory: the count its transaction bumped is seen.
    gone = before[0]
    assert commands.forget(other, ALICE, gone.memory_id).outcome is commands.ForgetOutcome.FORGOTTEN
    calls.clear()
    after = reply_read(reply)
    assert calls == ["GetItem", "BatchGetItem", "PutItem"]  # the header, the changed chunk, the row
    assert fetched == [[profile_index.chunk_key(gone.memory_id)]]
    assert gone.memory_id not in {m.memory_id for m in after}
    assert [m.memory_id for m in after] == [m.memory_id for m in before[1:]] + [after[-1].memory_id]

    # A new memory written elsewhere is chosen at once.
    newer = dataclasses.replace(memories[0], memory_id="zzzzz", text="a new bicycle", updated_at=T0, created_at=T0)
    other.apply(Change(Action.ADD, None, newer, "jev: add"), actor=Actor.EXTRACTION)
    assert reply_read(reply)[0].memory_id == "zzzzz"
    # A vector stored elsewhere (a change of the entry, not of the text) is read too.
    vector = EMBEDDINGS.embed_one(newer.text)
    assert other.set_embedding(newer, vector)
    assert reply_read(reply)[0].embedding == Embedding(vector.model, vectors.decode(vectors.encode(vector.vector)))
    calls.clear()
    reply_read(reply)
    assert calls == ["GetItem", "PutItem"]  # unchanged since: kept again


def test_a_write_in_the_same_function_is_seen_by_its_next_read_through_the_chunk_it_changed(dynamo):
    large(dynamo)
    store = a_store(dynamo)
    first = reply_read(store)
    assert store._cache.owners() == [ALICE.key]
    commands.forget(store, ALICE, first[0].memory_id)
    calls, fetched = calls_of(store), chunks_fetched(store)
    after = reply_read(store)
    assert calls == ["GetItem", "BatchGetItem", "PutItem"]
    assert fetched == [[profile_index.chunk_key(first[0].memory_id)]]
    assert first[0].memory_id not in {m.memory_id for m in after}


def test_a_copy_refreshed_chunk_by_chunk_through_many_changes_chooses_as_a_whole_profile_read(dynamo):
    memories = large(dynamo, n=50)
    reply, other = a_store(dynamo), a_store(dynamo)
    reply_read(reply)
    for i, memory in enumerate(memories[:12]):  # updates, deletes and adds, in two functions
        writer = reply if i % 2 else other
        if i % 3 == 0:
            commands.forget(writer, ALICE, memory.memory_id)
        else:
            changed = dataclasses.replace(memory, text=f"{memory.text} and tea {i}", updated_at=T0 + timedelta(hours=i))
            writer.apply(Change(Action.UPDATE, memory, changed, "jev: update"), actor=Actor.EXTRACTION)
        added = dataclasses.replace(memory, memory_id=f"tea{'abcdefghjkmn'[i]}z", text=f"tea number {i}")
        writer.apply(Change(Action.ADD, None, added, "jev: add"), actor=Actor.EXTRACTION)
        whole = reply.read_profile(ALICE, actor=Actor.OPERATOR, reason="check", limit=None)
        for query in QUERIES:
            vector = EMBEDDINGS.embed_one(query) if query else None

            def choose(profile: list[Memory], query=query, vector=vector) -> list[Memory]:
                return select(profile, query, query_embedding=vector)

            assert list(map(ranked_view, reply_read(reply, choose))) == list(map(ranked_view, choose(whole)))


def test_an_erasure_drops_the_copy_and_a_profile_written_again_is_never_taken_for_the_erased_one(dynamo):
    client, settings = dynamo
    large(dynamo, n=40)
    reply, held = a_store(dynamo), a_store(dynamo)
    erased = {m.memory_id for m in reply_read(reply)}
    reply_read(held)
    old = index_of(reply).generation, index_of(reply).version or 0
    assert reply._cache.owners() == held._cache.owners() == [ALICE.key]

    Erasure(a_store(dynamo), DynamoMessageStore(client, settings)).run("alice")  # another function
    calls = calls_of(reply)
    assert reply_read(reply) == []
    assert calls == ["GetItem", "Query", "PutItem"]  # no header: dropped, and read as never kept
    assert reply._cache.owners() == []

    # Back after the erasure, as many writes as before (``held`` read nothing meanwhile): the
    # header counts to the same version again; only its generation tells it from the erased one.
    again = [dataclasses.replace(m, memory_id=m.memory_id[::-1], text=f"new {m.text}") for m in seeded(40)]
    writer = a_store(dynamo)
    fill(writer, again[: old[1] - 1])
    writer.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")  # builds it: one more
    assert index_of(writer).version == old[1]
    chosen = reply_read(held)
    assert chosen and not {m.memory_id for m in chosen} & erased
    assert all(m.text.startswith("new ") for m in chosen)
    assert index_of(writer).generation != old[0]


def test_the_same_ten_as_a_whole_profile_read_for_every_query(dynamo):
    large(dynamo, n=150)
    reply = a_store(dynamo)
    whole = reply.read_profile(ALICE, actor=Actor.OPERATOR, reason="check", limit=None)
    today = date(2026, 11, 15)
    reply_read(reply)  # kept
    calls = calls_of(reply)
    for query in QUERIES:
        vector = EMBEDDINGS.embed_one(query) if query else None

        def choose(profile: list[Memory], query=query, vector=vector) -> list[Memory]:
            return select([m for m in profile if not m.ended(today)], query, query_embedding=vector)

        calls.clear()
        chosen = reply_read(reply, choose)
        assert calls == ["GetItem", "PutItem"]
        assert list(map(ranked_view, chosen)) == list(map(ranked_view, choose(whole)))
        [row] = reply.ledger_for(ALICE, limit=1)
        assert row.memory_ids == tuple(m.memory_id for m in choose(whole))
        # The extraction's ten from the same copy are the records themselves.
        assert reply.read_selected(ALICE, choose, actor=Actor.EXTRACTION, reason="extraction") == choose(whole)


def test_the_bound_drops_the_least_recently_used_owner_first(dynamo):
    for who in (ALICE, BOB, CAROL):
        large(dynamo, who)
    sizes = {who: sum(map(footprint, index_of(a_store(dynamo), who).memories())) for who in (ALICE, BOB, CAROL)}
    reply = a_store(dynamo, capacity=sizes[ALICE] + sizes[BOB] + sizes[CAROL] // 2)  # two of them fit

    reply_read(reply, who=ALICE)
    reply_read(reply, who=BOB)
    reply_read(reply, who=ALICE)  # used since: Bob is now the least recent
    assert reply._cache.owners() == [BOB.key, ALICE.key]
    reply_read(reply, who=CAROL)
    assert reply._cache.owners() == [ALICE.key, CAROL.key]
    assert reply._cache.size <= reply._cache.capacity

    calls = calls_of(reply)
    reply_read(reply, who=BOB)
    assert calls == ["Query", "Query", "PutItem"]  # dropped: read as never kept
    for who in (ALICE, CAROL, BOB):  # each owner's copy holds only their own entries
        kept = reply._cache.get(who.key, index_of(reply, who).generation) or {}
        assert {m.owner for chunk in kept.values() for m in chunk.memories} <= {who}


@pytest.mark.parametrize("capacity", [0, 1000])
def test_no_copy_when_the_bound_is_0_or_smaller_than_the_profile(dynamo, capacity):
    large(dynamo)
    reply = a_store(dynamo, capacity=capacity)
    reply_read(reply)
    calls = calls_of(reply)
    reply_read(reply)
    assert calls == ["Query", "Query", "PutItem"]
    assert reply._cache.owners() == [] and reply._cache.size == 0
