"""The core running on the DynamoDB memory store: what it relies on holds on the real adapter
(ledger before/after states read back equal to the stored records; one row per change)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fakes import T0, Clock, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, Verdict
from memorybot.core.rights.rollback import Outcome, Rollback
from memorybot.core.turn.extraction import Extractor


@pytest.fixture
def store(dynamo):
    client, settings = dynamo
    return DynamoMemoryStore(client, settings, clock=Clock())


def seed(store, *memories):
    for m in memories:
        store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)


def test_extraction_on_dynamodb_writes_each_change_with_one_ledger_row(store):
    kept, rewritten, dropped = (
        memory("alice", "kkkkk", "likes tea"),
        memory("alice", "uuuuu", "lives in Kyoto"),
        memory("alice", "ddddd", "exam on Friday"),
    )
    bobs = memory("bob", "uuuuu", "bob lives in Sapporo")
    seed(store, kept, rewritten, dropped, bobs)
    before_rows = len(store.ledger_for(owner("alice")))
    jev = ScriptedJev(worth=0.9, verdicts={"uuuuu": Verdict.UPDATE, "ddddd": Verdict.DELETE}, add=0.8)
    chat = ScriptedChat(texts={"uuuuu": "moved from Kyoto to Osaka", None: "plays the cello"})
    exchange = [
        message("alice", "I moved to Osaka and took up the cello"),
        message("bot", "Nice!", bot=True, to="alice"),
    ]

    result = Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)), new_id=lambda: "nnnnn").run(
        speaker("alice"), GLOBAL_SCOPE, exchange
    )

    assert (result.outcome, result.updated, result.deleted, result.added, result.conflicts) == (
        "done",
        ["uuuuu"],
        ["ddddd"],
        ["nnnnn"],
        0,
    )
    assert store.get(owner("alice"), "kkkkk") == kept
    assert store.get(owner("alice"), "uuuuu").text == "moved from Kyoto to Osaka"
    assert store.get(owner("alice"), "ddddd") is None
    assert store.get(owner("alice"), "nnnnn").text == "plays the cello"
    assert store.get(owner("bob"), "uuuuu") == bobs
    new_rows = store.ledger_for(owner("alice"))[: len(store.ledger_for(owner("alice"))) - before_rows]
    assert sorted(r.action.value for r in new_rows) == ["add", "delete", "read", "update"]
    assert all(r.actor is Actor.EXTRACTION for r in new_rows)


def test_a_nightly_run_rolls_back_through_the_ledger_on_dynamodb(store, dynamo):
    client, settings = dynamo
    runs = DynamoRunStore(client, settings)
    run = runs.claim("2026-11-21", T0)
    updated, deleted, untouched_later = (
        memory("alice", "uuuuu", "old text"),
        memory("alice", "ddddd", "decayed"),
        memory("bob", "bbbbb", "bob's"),
    )
    seed(store, updated, deleted, untouched_later)
    added = memory("alice", "aaaaa", "new from the run", at=T0 + timedelta(hours=1))
    new_text = memory("alice", "uuuuu", "new text", at=T0 + timedelta(hours=1))
    bob_new = memory("bob", "bbbbb", "bob's nightly rewrite", at=T0 + timedelta(hours=1))
    for change in (
        Change(Action.ADD, None, added, "jev: add"),
        Change(Action.UPDATE, updated, new_text, "jev verdict: update"),
        Change(Action.DELETE, deleted, None, "decay"),
        Change(Action.UPDATE, untouched_later, bob_new, "jev verdict: update"),
    ):
        store.apply(change, actor=Actor.NIGHTLY, run_id=run.run_id)
    # Bob changes his record after the run: the rollback must leave it alone.
    bob_later = memory("bob", "bbbbb", "bob's own later edit", at=T0 + timedelta(hours=2))
    store.apply(Change(Action.UPDATE, bob_new, bob_later, "jev verdict: update"), actor=Actor.EXTRACTION)

    result = Rollback(store, runs).run(run.run_id)

    assert result.outcome is Outcome.DONE
    assert sorted(result.reverted) == ["aaaaa", "ddddd", "uuuuu"] and result.skipped == ["bbbbb"]
    assert store.get(owner("alice"), "aaaaa") is None
    assert store.get(owner("alice"), "uuuuu") == updated
    assert store.get(owner("alice"), "ddddd") == deleted
    assert store.get(owner("bob"), "bbbbb") == bob_later
    rollback_rows = [e for e in store.ledger_for_run(run.run_id) if e.action is Action.ROLLBACK and e.memory_ids]
    assert len(rollback_rows) == 3 and {e.actor for e in rollback_rows} == {Actor.NIGHTLY}
    assert Rollback(store, runs).run(run.run_id).outcome is Outcome.ALREADY
