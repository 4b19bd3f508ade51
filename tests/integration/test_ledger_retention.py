"""Ledger retention on moto's DynamoDB server: read rows expire through TTL, change rows never do.

moto does not run DynamoDB's TTL sweeper, so ``expire`` below deletes what DynamoDB would: every
row whose TTL attribute is at or before a given time.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import pytest

from fakes import T0, Clock, memory, owner
from memorybot import tables
from memorybot.adapters.dynamodb_ledger import LEDGER_EXPIRY
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.config import Settings
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor
from memorybot.core.rights import commands
from memorybot.core.rights.rollback import Outcome, Rollback


def raw_ledger(dynamo) -> list[dict]:
    client, settings = dynamo
    return client.scan(TableName=settings.table(tables.MEMORY_LOG), ConsistentRead=True)["Items"]


def expire(dynamo, now: datetime) -> int:
    """DynamoDB's TTL sweep as of ``now``: deletes the rows whose expiry has passed."""
    client, settings = dynamo
    table = settings.table(tables.MEMORY_LOG)
    gone = 0
    for item in raw_ledger(dynamo):
        if LEDGER_EXPIRY in item and int(item[LEDGER_EXPIRY]["N"]) <= now.timestamp():
            client.delete_item(TableName=table, Key={"owner": item["owner"], "entry_key": item["entry_key"]})
            gone += 1
    return gone


def with_retention(dynamo, days: int) -> tuple:
    client, settings = dynamo
    return client, dataclasses.replace(settings, ledger_read_retention_days=days)


def test_the_memory_log_table_expires_rows_by_the_ledgers_ttl_attribute(dynamo):
    client, settings = dynamo
    ttl = client.describe_time_to_live(TableName=settings.table(tables.MEMORY_LOG))["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == LEDGER_EXPIRY == "expiration"


def test_read_rows_carry_the_expiry_and_change_rows_never_do(dynamo):
    client, settings = with_retention(dynamo, 30)
    store = DynamoMemoryStore(client, settings, clock=Clock())
    tea = memory("alice", "teaaa", "likes tea")
    store.apply(Change(Action.ADD, None, tea, "jev: add"), actor=Actor.EXTRACTION)
    store.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply", limit=10)
    matcha = dataclasses.replace(tea, text="likes matcha", updated_at=T0 + timedelta(minutes=1))
    store.apply(Change(Action.UPDATE, tea, matcha, "jev verdict: update"), actor=Actor.NIGHTLY, run_id=7)
    store.log_read(owner("alice"), ("teaaa",), actor=Actor.COMMAND, reason="memory suggest")
    store.apply(
        Change(Action.DELETE, matcha, None, "rollback of run 7"),
        actor=Actor.NIGHTLY,
        run_id=7,
        ledger_action="rollback",
    )
    store.apply(Change(Action.ADD, None, tea, "forget undone"), actor=Actor.COMMAND)
    store.apply(Change(Action.DELETE, tea, None, "memory forget"), actor=Actor.COMMAND)

    rows = raw_ledger(dynamo)
    reads = [r for r in rows if r["action"]["S"] == "read"]
    changes = [r for r in rows if r["action"]["S"] != "read"]
    assert len(reads) == 2 and {r["action"]["S"] for r in changes} == {"add", "update", "rollback", "delete"}
    assert all(LEDGER_EXPIRY not in r for r in changes)
    for read in reads:
        made = datetime.fromisoformat(read["at"]["S"])
        assert int(read[LEDGER_EXPIRY]["N"]) == int((made + timedelta(days=30)).timestamp())


def test_retention_zero_keeps_read_rows_for_ever(dynamo):
    client, settings = with_retention(dynamo, 0)
    store = DynamoMemoryStore(client, settings, clock=Clock())
    store.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply", limit=10)
    [read] = raw_ledger(dynamo)
    assert read["action"]["S"] == "read" and LEDGER_EXPIRY not in read


def test_by_default_read_rows_are_kept_400_days(dynamo):
    client, settings = dynamo
    assert settings.ledger_read_retention_days == 400
    DynamoMemoryStore(client, settings, clock=Clock()).read_profile(
        owner("alice"), actor=Actor.REPLY, reason="reply", limit=10
    )
    [read] = raw_ledger(dynamo)
    assert int(read[LEDGER_EXPIRY]["N"]) == pytest.approx((T0 + timedelta(days=400)).timestamp(), abs=1)


def test_once_the_read_rows_have_expired_a_run_still_rolls_back_and_export_is_unchanged(dynamo):
    client, settings = with_retention(dynamo, 1)
    store = DynamoMemoryStore(client, settings, clock=Clock())
    runs = DynamoRunStore(client, settings)
    old, decayed = memory("alice", "uuuuu", "old text"), memory("alice", "ddddd", "decayed")
    for m in (old, decayed):
        store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    run = runs.claim("2026-11-21", T0)
    assert run is not None
    # The night reads the profile (a read row with the run's id), then changes it.
    store.read_profile(owner("alice"), actor=Actor.NIGHTLY, reason="consolidation", limit=10, run_id=run.run_id)
    new = memory("alice", "uuuuu", "new text", at=T0 + timedelta(hours=1))
    added = memory("alice", "aaaaa", "new from the run", at=T0 + timedelta(hours=1))
    for change in (
        Change(Action.UPDATE, old, new, "jev verdict: update"),
        Change(Action.DELETE, decayed, None, "decay"),
        Change(Action.ADD, None, added, "jev: add"),
    ):
        store.apply(change, actor=Actor.NIGHTLY, run_id=run.run_id)
    store.read_profile(owner("alice"), actor=Actor.REPLY, reason="reply", limit=10)
    exported = commands.export(store, "alice")["scopes"][0]["ledger"]

    # Two days later every read row has expired (and only those: the changes carry no expiry).
    before = len(raw_ledger(dynamo))
    gone = expire(dynamo, T0 + timedelta(days=2))
    assert gone == 3 and len(raw_ledger(dynamo)) == before - gone
    assert all(e.action is not Action.READ for e in store.ledger_for(owner("alice"), limit=None))

    assert commands.export(store, "alice")["scopes"][0]["ledger"] == exported
    result = Rollback(store, runs).run(run.run_id)
    assert result.outcome is Outcome.DONE and sorted(result.reverted) == ["aaaaa", "ddddd", "uuuuu"]
    assert store.get(owner("alice"), "uuuuu") == old
    assert store.get(owner("alice"), "ddddd") == decayed
    assert store.get(owner("alice"), "aaaaa") is None


def test_a_negative_retention_is_refused():
    with pytest.raises(ValueError, match="MEMORYBOT_LEDGER_READ_RETENTION_DAYS"):
        Settings.from_env({"MEMORYBOT_LEDGER_READ_RETENTION_DAYS": "-1"})
    assert Settings.from_env({"MEMORYBOT_LEDGER_READ_RETENTION_DAYS": "0"}).ledger_read_retention_days == 0
