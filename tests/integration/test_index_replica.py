"""A function's first read of a large profile reads the selection index's chunks eventually
consistent (half the read units), against moto's DynamoDB: each chunk a replica returns is checked
against the header read strongly consistent before it (the same generation, at least its count of
changes), and a chunk that fails the check is read again strongly consistent.

moto always answers from the latest state, so a replica behind is played by a hook that hands
the store chunk items saved earlier in place of moto's answer to an eventually consistent Query.
"""

from __future__ import annotations

import copy
import dataclasses

from test_index_cache import a_store, calls_of, chunks_fetched, large, reply_read
from test_selection_index import ALICE, EMBEDDINGS, QUERIES, fill, index_of, newest, ranked_view, seeded

from memorybot.adapters import profile_index
from memorybot.adapters.dynamodb_items import Item, s
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore, memory_key
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.core.prompting.selection import select
from memorybot.core.record.domain import Actor, Memory
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure


def chunk_items(store: DynamoMemoryStore) -> list[Item]:
    """The owner's index chunks as they are now (a replica that stops here)."""
    return store._client.query(
        TableName=store._memories,
        KeyConditionExpression="#o = :o AND begins_with(memory_id, :c)",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": s(ALICE.key), ":c": s(profile_index.CHUNK_PREFIX)},
        ConsistentRead=True,
    )["Items"]


class Replica:
    """Answers every eventually consistent Query of index chunks with ``items`` (when set), as a
    replica that has not caught up; records each chunk Query's ConsistentRead."""

    def __init__(self, store: DynamoMemoryStore) -> None:
        self.items: list[Item] | None = None
        self.consistent: list[bool] = []
        events = store._client.meta.events
        events.register("before-parameter-build.dynamodb.Query", self._asked)
        events.register("after-call.dynamodb.Query", self._answer)

    def _asked(self, params, context, **_) -> None:
        if params["ExpressionAttributeValues"].get(":chunk") == s(profile_index.CHUNK_PREFIX):
            context["chunks"] = bool(params.get("ConsistentRead"))
            self.consistent.append(context["chunks"])

    def _answer(self, parsed, context, **_) -> None:
        if context.get("chunks") is False and self.items is not None:
            parsed["Items"] = copy.deepcopy(self.items)


def whole_choice(store: DynamoMemoryStore, query: str) -> list[Memory]:
    vector = EMBEDDINGS.embed_one(query) if query else None
    whole = store.read_profile(ALICE, actor=Actor.OPERATOR, reason="check", limit=None)
    return select(whole, query, query_embedding=vector)


def chooser(query: str):
    vector = EMBEDDINGS.embed_one(query) if query else None
    return lambda profile: select(profile, query, query_embedding=vector)


def test_a_first_read_takes_the_chunks_from_a_replica_and_chooses_as_a_whole_profile_read(dynamo):
    large(dynamo, n=60)
    assert index_of(a_store(dynamo)).stamped
    reply = a_store(dynamo)
    replica, calls = Replica(reply), calls_of(reply)
    for query in QUERIES:
        reply._cache.evict(ALICE.key)  # as a function that has not read the person yet
        calls.clear()
        chosen = reply_read(reply, chooser(query))
        assert calls == ["Query", "Query", "PutItem"]  # a page, the chunks, the read row: nothing read again
        assert list(map(ranked_view, chosen)) == list(map(ranked_view, whole_choice(reply, query)))
    assert replica.consistent and not any(replica.consistent)


def test_a_replica_behind_a_change_is_caught_by_the_counts_and_only_that_chunk_read_again(dynamo):
    memories = large(dynamo, n=60)
    reply, other = a_store(dynamo), a_store(dynamo)
    replica, fetched = Replica(reply), chunks_fetched(reply)
    replica.items = chunk_items(other)  # the replica stops here
    gone = newest(memories)[0]
    assert commands.forget(other, ALICE, gone.memory_id).outcome is commands.ForgetOutcome.FORGOTTEN

    chosen = reply_read(reply)
    assert fetched == [[profile_index.chunk_key(gone.memory_id)]]  # strongly consistent, that one alone
    assert gone.memory_id not in {m.memory_id for m in chosen}
    assert list(map(ranked_view, chosen)) == list(map(ranked_view, whole_choice(reply, "")))
    # The copy kept is the index as it is: the next read with nothing changed reads no chunk.
    calls = calls_of(reply)
    assert reply_read(reply) == chosen and calls == ["GetItem", "PutItem"]


def test_chunks_a_replica_does_not_return_are_read_again(dynamo):
    large(dynamo, n=60)
    reply = a_store(dynamo)
    replica, fetched = Replica(reply), chunks_fetched(reply)
    items = chunk_items(reply)
    missing = sorted(item["memory_id"]["S"] for item in items[:5])
    replica.items = items[5:]
    chosen = reply_read(reply)
    assert [sorted(keys) for keys in fetched] == [missing]
    assert list(map(ranked_view, chosen)) == list(map(ranked_view, whole_choice(reply, "")))


def test_a_replica_far_behind_is_replaced_by_one_consistent_query(dynamo):
    large(dynamo, n=60)
    reply = a_store(dynamo)
    replica, fetched = Replica(reply), chunks_fetched(reply)
    replica.items = []  # nothing caught up
    chosen = reply_read(reply)
    assert replica.consistent == [False, True] and fetched == []
    assert list(map(ranked_view, chosen)) == list(map(ranked_view, whole_choice(reply, "")))


def test_a_replica_of_an_erased_profile_never_passes_even_with_the_new_counts(dynamo):
    """The erased profile's chunks carry their generation; the profile written again after the
    erasure is built in a new one. Even given the new header's counts, the old chunks fail."""
    client, settings = dynamo
    large(dynamo, n=60)
    reply = a_store(dynamo)
    erased_chunks = chunk_items(reply)
    erased = {name for item in erased_chunks for name in item if name not in ("owner", "memory_id")}
    Erasure(a_store(dynamo), DynamoMessageStore(client, settings)).run("alice")

    again = [dataclasses.replace(m, memory_id=m.memory_id[::-1], text=f"new {m.text}") for m in seeded(60)]
    writer = a_store(dynamo)
    fill(writer, again)
    writer.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")  # builds it
    commands.forget(writer, ALICE, again[0].memory_id)  # a count above 0 in one chunk
    index = index_of(writer)
    assert index.stamped and index.generation
    forged = copy.deepcopy(erased_chunks)
    for item in forged:  # the old chunks, with counts that would pass
        item[profile_index.CHUNK_COUNT] = {"N": str(index.counts.get(item["memory_id"]["S"], 0) + 1)}
    replica = Replica(reply)
    replica.items = forged

    chosen = reply_read(reply)
    assert replica.consistent == [False, True]  # nothing proven: every chunk read again
    assert chosen and all(m.text.startswith("new ") for m in chosen)
    kept = reply._cache.get(ALICE.key, index.generation) or {}
    assert not {m.memory_id for chunk in kept.values() for m in chunk.memories} & erased


def test_an_index_built_before_the_stamp_is_read_consistently_until_a_writer_builds_it_again(dynamo):
    large(dynamo, n=60)
    store = a_store(dynamo)
    client = store._client
    key = memory_key(ALICE, profile_index.HEADER_KEY)  # as built before: no mark, chunks without generation
    client.update_item(TableName=store._memories, Key=key, UpdateExpression=f"REMOVE {profile_index.STAMPED}")
    for item in chunk_items(store):
        client.update_item(
            TableName=store._memories,
            Key={"owner": item["owner"], "memory_id": item["memory_id"]},
            UpdateExpression="REMOVE g",
        )
    reply = a_store(dynamo)
    replica, calls = Replica(reply), calls_of(reply)
    reply_read(reply)
    assert replica.consistent == [True] and "TransactWriteItems" not in calls  # the reply never builds

    writer = a_store(dynamo)
    writer.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")
    index = index_of(writer)
    assert index.stamped
    assert {item["g"]["S"] for item in chunk_items(writer)} == {index.generation}
    assert len(chunk_items(writer)) == profile_index.CHUNKS
    reply._cache.evict(ALICE.key)
    replica.consistent.clear()
    reply_read(reply)
    assert replica.consistent == [False]


def test_a_small_profiles_index_is_unstamped_and_stamped_when_the_profile_grows_large(dynamo):
    writer = a_store(dynamo)
    memories = seeded(40)
    fill(writer, memories[:8])
    writer.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")  # built from the page
    small = index_of(writer)
    assert small.complete and not small.stamped
    occupied = {profile_index.chunk_key(m.memory_id) for m in memories[:8]}
    assert {item["memory_id"]["S"] for item in chunk_items(writer)} == occupied  # no empty chunk items

    fill(writer, memories[8:])  # past a page: large
    reply = a_store(dynamo)
    replica = Replica(reply)
    reply_read(reply)
    assert replica.consistent == [True]  # not stamped: read strongly consistent, and the reply never builds

    writer.read_selected(ALICE, newest, actor=Actor.EXTRACTION, reason="extraction")  # builds it again, stamped
    large_index = index_of(writer)
    assert large_index.stamped and large_index.generation != small.generation
    assert len(chunk_items(writer)) == profile_index.CHUNKS
    reply._cache.evict(ALICE.key)
    replica.consistent.clear()
    chosen = reply_read(reply)
    assert replica.consistent == [False]
    assert list(map(ranked_view, chosen)) == list(map(ranked_view, whole_choice(reply, "")))
