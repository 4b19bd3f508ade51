"""The forgotten-sources read against moto's DynamoDB server: one GetItem of one small item,
whatever the length of the person's history, kept with each forget in its transaction, and
removed by erasure."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from fakes import Clock, memory, owner
from memorybot import tables
from memorybot.adapters.dynamodb_ledger import ledger_item
from memorybot.adapters.dynamodb_memories import FORGOTTEN_KEY, DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.core.record.changes import Change, LedgerEntry
from memorybot.core.record.domain import Action, Actor, SourceRef
from memorybot.core.rights import commands
from memorybot.core.rights.erasure import Erasure


@pytest.fixture
def store(dynamo):
    client, settings = dynamo
    return DynamoMemoryStore(client, settings, clock=Clock())


class Requests:
    """Every DynamoDB request the client sends, with the size of its answer."""

    def __init__(self, client) -> None:
        self.seen: list[tuple[str, int]] = []
        self._client = client

    def __enter__(self) -> Requests:
        self._client.meta.events.register("after-call.dynamodb.*", self._after)
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.meta.events.unregister("after-call.dynamodb.*", self._after)

    def _after(self, http_response, model, **_kw) -> None:
        self.seen.append((model.name, len(http_response.content)))


def _history(dynamo, who: str, rows: int) -> None:
    """``rows`` ledger rows (reads, as every turn writes) for the person."""
    client, settings = dynamo
    start = Clock().now
    reads = [LedgerEntry(who, Action.READ, Actor.EXTRACTION, "turn", start + timedelta(seconds=n)) for n in range(rows)]
    for batch in range(0, len(reads), 25):
        requests = [{"PutRequest": {"Item": ledger_item(e)}} for e in reads[batch : batch + 25]]
        client.batch_write_item(RequestItems={settings.table(tables.MEMORY_LOG): requests})


def _forget(store, who: str, memory_id: str, *message_ids: str) -> None:
    m = replace(memory(who, memory_id), sources=tuple(SourceRef("c1", i) for i in message_ids))
    store.apply(Change(Action.ADD, None, m, "add"), actor=Actor.EXTRACTION)
    assert commands.forget(store, owner(who), memory_id).outcome is commands.ForgetOutcome.FORGOTTEN


def test_the_read_costs_one_small_request_with_10_or_1000_ledger_rows(store, dynamo):
    client, _ = dynamo
    costs = {}
    for who, rows in (("short", 10), ("long", 1000)):
        _history(dynamo, who, rows)
        _forget(store, who, "fffff", "11", "12")
        with Requests(client) as requests:
            assert store.forgotten_sources(owner(who)) == {"11", "12"}
        costs[rows] = requests.seen
    # one GetItem each, answering the same bytes: nothing in it grows with the history
    assert [op for op, _ in costs[10]] == [op for op, _ in costs[1000]] == ["GetItem"]
    assert costs[10][0][1] == costs[1000][0][1]


def test_the_forget_records_its_sources_in_the_same_transaction(store, dynamo):
    client, settings = dynamo
    m = replace(memory("alice", "aaaaa"), sources=(SourceRef("c1", "21"), SourceRef("c1", "22")))
    store.apply(Change(Action.ADD, None, m, "add"), actor=Actor.EXTRACTION)
    with Requests(client) as requests:
        store.apply(Change(Action.DELETE, m, None, "forget"), actor=Actor.COMMAND)
    assert [op for op, _ in requests.seen] == ["TransactWriteItems"]  # delete, ledger row, sources: one call
    item = client.get_item(
        TableName=settings.table(tables.MEMORIES),
        Key={"owner": {"S": owner("alice").key}, "memory_id": {"S": FORGOTTEN_KEY}},
        ConsistentRead=True,
    )["Item"]
    assert set(item["forgotten"]["SS"]) == {"21", "22"}
    assert (item["user_id"], item["scope"]) == ({"S": "alice"}, {"S": "global"})
    # not a memory: no profile read, no review lists it
    assert store.read_profile(owner("alice"), actor=Actor.COMMAND, reason="t", limit=None) == []
    assert store.stale(Clock().now + timedelta(days=3650), 20) == []


def test_erasure_removes_the_record_and_export_shows_it(store, dynamo):
    client, settings = dynamo
    _forget(store, "erin", "eeeee", "31")
    exported = commands.export(store, "erin")
    assert [s["forgottenSourceMessageIds"] for s in exported["scopes"]] == [["31"]]

    result = Erasure(store, DynamoMessageStore(client, settings)).run("erin")
    assert result.found
    key = {"owner": {"S": owner("erin").key}, "memory_id": {"S": FORGOTTEN_KEY}}
    assert "Item" not in client.get_item(TableName=settings.table(tables.MEMORIES), Key=key, ConsistentRead=True)
    assert store.forgotten_sources(owner("erin")) == frozenset()
