"""DynamoMemoryStore against moto's DynamoDB server: transactions, conflicts, scoping, the ledger."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from botocore.exceptions import ClientError

from fakes import T0, Clock, memory, owner
from memorybot import tables
from memorybot.adapters.dynamodb_client import dynamodb_client
from memorybot.adapters.dynamodb_ledger import ledger_item
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore, stale_shard
from memorybot.core.record.changes import Change, LedgerEntry
from memorybot.core.record.domain import Action, Actor, Memory, SourceRef, iso
from memorybot.core.record.ports import ConflictError
from memorybot.core.rights import commands


@pytest.fixture
def store(dynamo):
    client, settings = dynamo
    return DynamoMemoryStore(client, settings, clock=Clock())


def raw_memory(dynamo, user_id, memory_id, scope="global"):
    client, settings = dynamo
    key = {"owner": {"S": f"{scope}#{user_id}"}, "memory_id": {"S": memory_id}}
    return client.get_item(TableName=settings.table(tables.MEMORIES), Key=key, ConsistentRead=True).get("Item")


def raw_ledger(dynamo):
    client, settings = dynamo
    return client.scan(TableName=settings.table(tables.MEMORY_LOG))["Items"]


def add(store, m: Memory, actor=Actor.EXTRACTION, run_id=None):
    return store.apply(Change(Action.ADD, None, m, "jev: add"), actor=actor, run_id=run_id)


def rewrite(m: Memory, text: str, minutes: int = 1) -> Memory:
    return dataclasses.replace(m, text=text, updated_at=m.updated_at + timedelta(minutes=minutes))


# ---- add / update / delete ------------------------------------------------------


def test_add_commits_the_memory_and_exactly_one_ledger_row(store, dynamo):
    m = memory("alice", "abcde", "likes green tea")
    entry = add(store, m)

    assert store.get(owner("alice"), "abcde") == m
    item = raw_memory(dynamo, "alice", "abcde")
    assert item["stale_shard"] == {"S": stale_shard(owner("alice"))}
    assert (item["owner"], item["scope"], item["user_id"]) == ({"S": "global#alice"}, {"S": "global"}, {"S": "alice"})
    assert item["updated_at"] == {"S": iso(m.updated_at)}
    [row] = raw_ledger(dynamo)
    assert "run_id" not in row and "before" not in row  # by_run stays sparse; no before for an add
    [logged] = store.ledger_for(owner("alice"))
    assert logged == entry
    assert (logged.action, logged.actor, logged.reason) == (Action.ADD, Actor.EXTRACTION, "jev: add")
    assert logged.memory_ids == ("abcde",) and logged.before is None and logged.after == m


def test_update_commits_the_new_state_with_before_and_after_in_the_ledger(store):
    m = memory("alice", "abcde", "likes green tea")
    add(store, m)
    new = rewrite(m, "likes green tea, and matcha since November")

    entry = store.apply(Change(Action.UPDATE, m, new, "jev verdict: update"), actor=Actor.NIGHTLY, run_id=3)

    assert store.get(owner("alice"), "abcde") == new
    newest, oldest = store.ledger_for(owner("alice"))
    assert newest == entry and oldest.action is Action.ADD
    assert (newest.action, newest.actor, newest.run_id) == (Action.UPDATE, Actor.NIGHTLY, 3)
    assert newest.before == m and newest.after == new


def test_delete_removes_the_row_for_real_and_the_ledger_keeps_the_before_state(store, dynamo):
    m = memory("alice", "abcde", "is moving to Osaka in March")
    add(store, m)

    store.apply(Change(Action.DELETE, m, None, "user asked to forget"), actor=Actor.COMMAND)

    assert store.get(owner("alice"), "abcde") is None
    assert raw_memory(dynamo, "alice", "abcde") is None
    deleted = store.ledger_for(owner("alice"))[0]
    assert (deleted.action, deleted.before, deleted.after) == (Action.DELETE, m, None)


def test_ledger_action_override_records_a_rollback(store):
    m = memory("alice", "abcde")
    add(store, m, actor=Actor.NIGHTLY, run_id=5)

    entry = store.apply(
        Change(Action.DELETE, m, None, "rollback of run 5"), actor=Actor.NIGHTLY, run_id=5, ledger_action="rollback"
    )

    assert entry.action is Action.ROLLBACK
    assert store.get(owner("alice"), "abcde") is None
    assert [e.action for e in store.ledger_for_run(5)] == [Action.ROLLBACK, Action.ADD]


# ---- conflicts ------------------------------------------------------------------

STORED = memory("alice", "abcde", "likes green tea")


@pytest.mark.parametrize(
    "stale_before",
    [
        dataclasses.replace(STORED, text="likes black tea"),
        dataclasses.replace(STORED, updated_at=STORED.updated_at - timedelta(microseconds=1)),
        dataclasses.replace(STORED, created_at=STORED.created_at - timedelta(days=1)),
    ],
    ids=["text-differs", "updated_at-differs", "created_at-differs"],
)
@pytest.mark.parametrize("action", [Action.UPDATE, Action.DELETE])
def test_a_change_from_a_state_that_is_not_the_stored_one_conflicts_and_changes_nothing(
    store, dynamo, stale_before, action
):
    add(store, STORED)
    rows_before = raw_ledger(dynamo)
    after = rewrite(stale_before, "likes oolong") if action is Action.UPDATE else None

    with pytest.raises(ConflictError):
        store.apply(Change(action, stale_before, after, "jev verdict"), actor=Actor.EXTRACTION)

    assert store.get(owner("alice"), "abcde") == STORED
    assert raw_ledger(dynamo) == rows_before


def test_the_second_of_two_changes_read_from_the_same_state_conflicts(store, dynamo):
    m = memory("alice", "abcde", "likes green tea")
    add(store, m)
    read_by_first = read_by_second = store.get(owner("alice"), "abcde")
    forgotten = Change(Action.DELETE, read_by_first, None, "user asked to forget")
    rewritten = Change(Action.UPDATE, read_by_second, rewrite(m, "likes matcha"), "jev verdict: update")

    store.apply(forgotten, actor=Actor.COMMAND)
    with pytest.raises(ConflictError):
        store.apply(rewritten, actor=Actor.EXTRACTION)

    assert store.get(owner("alice"), "abcde") is None  # the forget stands: not resurrected by the old read
    assert [e.action for e in store.ledger_for(owner("alice"))] == [Action.DELETE, Action.ADD]
    assert len(raw_ledger(dynamo)) == 2


def test_deleting_an_absent_record_conflicts_and_logs_nothing(store, dynamo):
    with pytest.raises(ConflictError):
        store.apply(Change(Action.DELETE, memory("alice", "abcde"), None, "forget"), actor=Actor.COMMAND)
    assert raw_ledger(dynamo) == []


def test_adding_an_existing_id_conflicts_and_keeps_the_original(store, dynamo):
    original = memory("alice", "abcde", "likes green tea")
    add(store, original)

    with pytest.raises(ConflictError):
        add(store, memory("alice", "abcde", "plays the cello", at=T0 + timedelta(hours=1)))

    assert store.get(owner("alice"), "abcde") == original
    assert len(raw_ledger(dynamo)) == 1


def test_errors_other_than_the_condition_propagate(dynamo):
    client, settings = dynamo
    names = {**settings.table_names, "memory_log": "no-such-table"}
    broken = DynamoMemoryStore(client, dataclasses.replace(settings, table_names=names))

    with pytest.raises(ClientError) as raised:
        add(broken, memory("alice", "abcde"))

    assert not isinstance(raised.value, ConflictError)
    assert DynamoMemoryStore(client, settings).get(owner("alice"), "abcde") is None  # the transaction wrote nothing


def test_concurrent_updates_from_the_same_read_commit_exactly_once(dynamo, serialised_moto):
    # serialised_moto: real DynamoDB serialises conflicting transactions; moto does not.
    client, settings = dynamo
    store = DynamoMemoryStore(client, settings)  # the real clock: threads write distinct ledger keys
    m = memory("alice", "abcde", "likes green tea")
    add(store, m)
    threads_count = 8
    start = threading.Barrier(threads_count)
    outcomes: dict[int, str] = {}

    def update(n: int) -> None:
        change = Change(Action.UPDATE, m, rewrite(m, f"version {n}", minutes=n + 1), "jev verdict: update")
        start.wait()
        try:
            store.apply(change, actor=Actor.EXTRACTION)
            outcomes[n] = "applied"
        except ConflictError:
            outcomes[n] = "conflict"

    threads = [threading.Thread(target=update, args=(n,)) for n in range(threads_count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    winners = [n for n, outcome in outcomes.items() if outcome == "applied"]
    assert len(outcomes) == threads_count and len(winners) == 1
    assert store.get(owner("alice"), "abcde").text == f"version {winners[0]}"
    updates = [e for e in store.ledger_for(owner("alice")) if e.action is Action.UPDATE]
    assert len(updates) == 1 and updates[0].after.text == f"version {winners[0]}"


# ---- scoping --------------------------------------------------------------------


def test_one_user_never_sees_or_touches_another_users_rows(store, dynamo):
    alices = memory("alice", "abcde", "alice's secret")
    add(store, alices)
    alice_ledger = store.ledger_for(owner("alice"))

    assert store.get(owner("bob"), "abcde") is None
    assert store.read_profile(owner("bob"), actor=Actor.REPLY, reason="reply prompt", limit=10) == []
    # Bob's forget of Alice's id is "not found" and deletes nothing.
    assert commands.forget(store, owner("bob"), "abcde").outcome is commands.ForgetOutcome.NOT_FOUND
    # A change built for Bob from Alice's record (same id, same text) finds no record of Bob's.
    with pytest.raises(ConflictError):
        store.apply(Change(Action.DELETE, dataclasses.replace(alices, user_id="bob"), None, "x"), actor=Actor.COMMAND)
    # Bob may own the same id: it is a different record.
    bobs = memory("bob", "abcde", "bob's own")
    add(store, bobs)
    store.apply(Change(Action.UPDATE, bobs, rewrite(bobs, "bob's rewrite"), "x"), actor=Actor.EXTRACTION)

    assert store.get(owner("alice"), "abcde") == alices
    assert store.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply prompt", limit=10) == [alices]
    assert store.ledger_for(owner("alice"))[1:] == alice_ledger  # only Alice's own read was added
    assert {e.user_id for e in store.ledger_for(owner("bob"))} == {"bob"}
    assert all(e.memory_ids == () or e.user_id == "bob" for e in store.ledger_for(owner("bob")))


def test_one_person_in_two_scopes_has_two_separate_profiles(store, dynamo):
    here, there = owner("alice", "guild:1"), owner("alice", "guild:2")
    mine_here = memory("alice", "abcde", "learned here", scope="guild:1")
    add(store, mine_here)
    assert store.get(there, "abcde") is None
    assert store.read_profile(there, actor=Actor.COMMAND, reason="memory show", limit=10) == []
    assert commands.forget(store, there, "abcde").outcome is commands.ForgetOutcome.NOT_FOUND
    mine_there = memory("alice", "abcde", "learned there", scope="guild:2")  # the same id: another record
    add(store, mine_there)
    assert store.get(here, "abcde") == mine_here and store.get(there, "abcde") == mine_there
    assert raw_memory(dynamo, "alice", "abcde", scope="guild:2")["scope"] == {"S": "guild:2"}
    assert [e.owner for e in store.ledger_for(there)] == [there, there]  # the add, then the read
    assert [e.after for e in store.ledger_for(here)] == [mine_here]
    sourced = replace(mine_here, sources=(SourceRef("c1", "42"),))
    store.apply(Change(Action.UPDATE, mine_here, sourced, "learned"), actor=Actor.EXTRACTION)
    store.apply(Change(Action.DELETE, sourced, None, "forget"), actor=Actor.COMMAND)
    assert store.forgotten_sources(here) == {"42"} and store.forgotten_sources(there) == frozenset()


def test_a_change_for_one_user_only_writes_that_users_rows(store, dynamo):
    add(store, memory("bob", "bbbbb", "bob's"))
    before = {(i["user_id"]["S"], i["entry_key"]["S"]) for i in raw_ledger(dynamo)}

    a = memory("alice", "aaaaa", "alice's")
    add(store, a)
    store.apply(Change(Action.UPDATE, a, rewrite(a, "alice's new"), "x"), actor=Actor.EXTRACTION)
    store.apply(Change(Action.DELETE, rewrite(a, "alice's new"), None, "x"), actor=Actor.COMMAND)

    new_rows = {(i["user_id"]["S"], i["entry_key"]["S"]) for i in raw_ledger(dynamo)} - before
    assert len(new_rows) == 3 and {user for user, _ in new_rows} == {"alice"}
    assert store.get(owner("bob"), "bbbbb") == memory("bob", "bbbbb", "bob's")


# ---- read_profile -----------------------------------------------------------------


def test_read_profile_returns_the_newest_first_up_to_the_limit_and_logs_one_read(store):
    for n in range(12):
        # Inserted in shuffled order so the result's order comes from updated_at, not insertion.
        k = (n * 5) % 12
        add(store, memory("alice", f"m{k:04d}", f"fact {k}", at=T0 + timedelta(hours=k)))
    add(store, memory("bob", "zzzzz", "bob's fact", at=T0 + timedelta(days=9)))
    changes = len(store.ledger_for(owner("alice")))

    profile = store.read_profile(owner("alice"), actor=Actor.EXTRACTION, reason="worth keeping", limit=10, run_id=4)

    assert [m.memory_id for m in profile] == [f"m{k:04d}" for k in range(11, 1, -1)]
    rows = store.ledger_for(owner("alice"))
    assert len(rows) == changes + 1
    read = rows[0]
    assert (read.action, read.actor, read.reason, read.run_id) == (Action.READ, Actor.EXTRACTION, "worth keeping", 4)
    assert read.memory_ids == tuple(m.memory_id for m in profile)
    assert store.ledger_for_run(4) == [read]


def test_read_profile_of_an_empty_profile_still_logs_the_read(store):
    assert store.read_profile(owner("carol"), actor=Actor.COMMAND, reason="memory show", limit=10) == []
    [read] = store.ledger_for(owner("carol"))
    assert (read.action, read.actor, read.memory_ids, read.run_id) == (Action.READ, Actor.COMMAND, (), None)


def test_read_profile_raises_when_its_ledger_row_cannot_be_written(dynamo):
    client, settings = dynamo
    DynamoMemoryStore(client, settings).apply(
        Change(Action.ADD, None, memory("alice", "abcde"), "x"), actor=Actor.EXTRACTION
    )
    names = {**settings.table_names, "memory_log": "no-such-table"}
    unlogged = DynamoMemoryStore(client, dataclasses.replace(settings, table_names=names))

    with pytest.raises(ClientError):
        unlogged.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply prompt", limit=10)


# ---- stale ------------------------------------------------------------------------


def test_stale_returns_the_oldest_first_across_users_and_shards_up_to_the_limit(store):
    users = [f"user{n}" for n in range(12)]
    assert len({stale_shard(owner(u)) for u in users}) == tables.STALE_SHARDS  # the data spans every shard
    cutoff = T0
    expected = []
    for n, user in enumerate(users):
        old = memory(user, "old00", at=cutoff - timedelta(days=40, hours=(n * 7) % 12))
        add(store, old)
        expected.append(old)
        add(store, memory(user, "fresh", at=cutoff + timedelta(hours=n)))
    add(store, memory("edge", "edge0", at=cutoff))  # exactly at the cutoff: not before it
    expected.sort(key=lambda m: m.updated_at)

    assert store.stale(cutoff, limit=100) == expected
    assert store.stale(cutoff, limit=5) == expected[:5]
    assert store.stale(cutoff - timedelta(days=100), limit=5) == []


def test_a_memory_updated_since_leaves_the_stale_set(store):
    m = memory("alice", "abcde", at=T0 - timedelta(days=31))
    add(store, m)
    assert store.stale(T0 - timedelta(days=30), limit=20) == [m]

    store.apply(Change(Action.UPDATE, m, dataclasses.replace(m, updated_at=T0), "x"), actor=Actor.EXTRACTION)

    assert store.stale(T0 - timedelta(days=30), limit=20) == []


# ---- the ledger ---------------------------------------------------------------------


def test_ledger_for_run_is_newest_first_and_holds_only_that_runs_rows(store):
    add(store, memory("alice", "a0000"), actor=Actor.EXTRACTION)  # no run
    first = add(store, memory("alice", "a0001"), actor=Actor.NIGHTLY, run_id=1)
    add(store, memory("bob", "b0001"), actor=Actor.NIGHTLY, run_id=2)
    read = store.read_profile(owner("bob"), actor=Actor.NIGHTLY, reason="nightly", limit=10, run_id=1)
    last = add(store, memory("carol", "c0001"), actor=Actor.NIGHTLY, run_id=1)
    store.read_profile(owner("carol"), actor=Actor.REPLY, reason="reply", limit=10)  # no run

    rows = store.ledger_for_run(1)

    assert [r.entry_id for r in rows] == [last.entry_id, store.ledger_for(owner("bob"))[0].entry_id, first.entry_id]
    assert [r.user_id for r in rows] == ["carol", "bob", "alice"]
    assert rows[1].memory_ids == tuple(m.memory_id for m in read)
    assert all(r.run_id == 1 for r in rows)
    assert store.ledger_for_run(3) == []


def test_ledger_for_is_newest_first_and_limited(store):
    for n in range(5):
        add(store, memory("alice", f"a000{n}"))
    rows = store.ledger_for(owner("alice"), limit=3)
    assert [r.memory_ids for r in rows] == [("a0004",), ("a0003",), ("a0002",)]


def test_forgotten_sources_are_exactly_the_sources_of_memories_forgotten_by_command(store, dynamo):
    assert store.forgotten_sources(owner("alice")) == frozenset()

    def sourced(memory_id: str, *message_ids: str):
        return replace(memory("alice", memory_id), sources=tuple(SourceRef("c1", m) for m in message_ids))

    a, b, c = sourced("aaaaa", "11"), sourced("bbbbb", "21", "22"), sourced("ccccc", "31")
    for m in (a, b, c):
        add(store, m)
    assert raw_memory(dynamo, "alice", "bbbbb")["sources"] == {"L": [{"S": "c1/21"}, {"S": "c1/22"}]}
    assert store.get(owner("alice"), "bbbbb") == b  # provenance survives the round trip
    store.apply(Change(Action.DELETE, a, None, "jev verdict: delete"), actor=Actor.EXTRACTION)
    assert store.forgotten_sources(owner("alice")) == frozenset()  # not a forget: extraction deleted it

    forgot = store.apply(Change(Action.DELETE, b, None, "forget"), actor=Actor.COMMAND)
    assert forgot.sources == b.sources
    # Many newer rows: the forget is several pages back.
    client, settings = dynamo
    reads = [
        LedgerEntry("alice", Action.READ, Actor.COMMAND, "memory show", forgot.at + timedelta(seconds=n))
        for n in range(1, 251)
    ]
    for batch in range(0, len(reads), 25):
        requests = [{"PutRequest": {"Item": ledger_item(e)}} for e in reads[batch : batch + 25]]
        client.batch_write_item(RequestItems={settings.table(tables.MEMORY_LOG): requests})
    bobs = replace(memory("bob", "bbbbb"), sources=(SourceRef("c1", "99"),))
    add(store, bobs)
    store.apply(Change(Action.DELETE, bobs, None, "forget"), actor=Actor.COMMAND)

    assert store.forgotten_sources(owner("alice")) == {"21", "22"}
    assert store.forgotten_sources(owner("bob")) == {"99"}
    [row] = [
        e
        for e in store.ledger_for(owner("alice"), limit=None)
        if e.actor is Actor.COMMAND and e.action is Action.DELETE
    ]
    store.redact(row)  # an erasure keeps the ids: the rule still holds after it
    assert store.forgotten_sources(owner("alice")) == {"21", "22"}


# ---- the client ---------------------------------------------------------------------


def test_the_client_follows_the_endpoint_from_the_environment(dynamo, moto_server, monkeypatch):
    _, settings = dynamo
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server.endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")

    client = dynamodb_client()

    assert client.meta.endpoint_url == moto_server.endpoint
    assert client.meta.config.retries["mode"] == "standard"
    assert client.describe_table(TableName=settings.table(tables.MEMORIES))["Table"]["ItemCount"] == 0
