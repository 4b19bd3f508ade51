"""Races against moto's server over HTTP, with real threads.

``serialised_moto`` makes moto answer one request at a time (its transactions are not
thread-safe); the interleavings between requests are still the threads' own.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from fakes import T0, Clock, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from faults import Snapshot, assert_every_change_has_exactly_one_ledger_row
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, MemoryDraft, Verdict
from memorybot.core.rights import commands
from memorybot.core.rights.rollback import Outcome, Rollback
from memorybot.core.turn.extraction import Extractor

ALICE = "alice"
IDS = ["aaaaa", "bbbbb", "ccccc", "ddddd", "eeeee"]


class SlowChat(ScriptedChat):
    """Widens the window between an extraction's read and its writes."""

    def __init__(self, tag: str, delay: float = 0.05):
        super().__init__()
        self.tag, self.delay = tag, delay

    def write_memory(self, exchange, current):
        time.sleep(self.delay)
        return MemoryDraft(f"{self.tag} rewrote {current.memory_id}" if current else f"{self.tag} added")


@pytest.fixture
def store(dynamo, serialised_moto):
    client, settings = dynamo
    s = DynamoMemoryStore(client, settings, clock=Clock())
    for memory_id in IDS:
        s.apply(Change(Action.ADD, None, memory(ALICE, memory_id, f"fact {memory_id}"), "seed"), actor=Actor.EXTRACTION)
    return s


def test_concurrent_extractions_and_a_forget_lose_nothing_and_resurrect_nothing(store, dynamo):
    client, settings = dynamo
    before = Snapshot.take(client, settings)
    forget_now = threading.Event()

    def extraction(tag: str):
        jev = ScriptedJev(worth=0.9, add=0.9)
        jev.default_verdict = Verdict.UPDATE
        chat = SlowChat(tag)
        original = chat.write_memory

        def write_memory(exchange, current):  # the forget lands while extractions hold stale reads
            forget_now.set()
            return original(exchange, current)

        chat.write_memory = write_memory
        exchange = [message(ALICE, f"news {tag}", name="alice")]
        return Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1))).run(
            speaker(ALICE, "alice"), GLOBAL_SCOPE, exchange
        )

    def forget():
        forget_now.wait(5)
        return commands.forget(store, owner(ALICE), "ccccc")

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = [pool.submit(extraction, f"x{i}") for i in range(4)]
        forgotten = pool.submit(forget)
        results = [r.result() for r in results]
        assert forgotten.result().outcome is commands.ForgetOutcome.FORGOTTEN

    after = Snapshot.take(client, settings)
    assert (owner(ALICE), "ccccc") not in after.memories  # no stale read brought it back
    assert_every_change_has_exactly_one_ledger_row(before, after)
    # each record was rewritten by exactly one extraction; the others' stale writes were dropped
    updated_then_forgotten = sum("ccccc" in r.updated for r in results)
    applied_updates = sum(len(r.updated) for r in results)
    rewritten = [k for k, m in after.memories.items() if k[1] in IDS and m.text != before.memories[k].text]
    assert len(rewritten) == len(IDS) - 1
    assert applied_updates == len(rewritten) + updated_then_forgotten
    attempted = sum(len(r.updated) + r.conflicts for r in results)
    # Every update Jev asked for (each extraction's read rows name what it judged: all five, or
    # four when its read came after the forget) was either applied or dropped, none vanished.
    reads = [e for e in store.ledger_for(owner(ALICE), limit=None) if e.action is Action.READ]
    assert len(reads) == 4 and all(len(e.memory_ids) in (len(IDS), len(IDS) - 1) for e in reads)
    assert attempted == sum(len(e.memory_ids) for e in reads)
    # every extraction's add is its own new record
    assert sum(len(r.added) for r in results) == 4


def test_a_rollback_racing_an_extraction_skips_what_the_extraction_changed(store, dynamo):
    client, settings = dynamo
    runs = DynamoRunStore(client, settings)
    run = runs.claim("2026-11-20", T0)
    # the nightly run rewrote every record
    for memory_id in IDS:
        current = store.get(owner(ALICE), memory_id)
        after = memory(ALICE, memory_id, f"nightly {memory_id}", at=T0 + timedelta(hours=1))
        store.apply(Change(Action.UPDATE, current, after, "nightly"), actor=Actor.NIGHTLY, run_id=run.run_id)
    runs.finish(run)
    before = Snapshot.take(client, settings)

    jev = ScriptedJev(worth=0.9, add=0.0)
    jev.default_verdict = Verdict.UPDATE
    extractor = Extractor(store, jev, SlowChat("later", delay=0.01), clock=Clock(T0 + timedelta(days=2)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        extraction = pool.submit(
            extractor.run, speaker(ALICE, "alice"), GLOBAL_SCOPE, [message(ALICE, "an update", name="alice")]
        )
        rollback = pool.submit(Rollback(store, runs).run, run.run_id)
        extraction, rollback = extraction.result(), rollback.result()

    after = Snapshot.take(client, settings)
    assert_every_change_has_exactly_one_ledger_row(before, after)
    assert rollback.outcome is Outcome.DONE
    assert sorted(rollback.reverted + rollback.skipped) == sorted(IDS)
    for memory_id in IDS:
        text = after.memories[(owner(ALICE), memory_id)].text
        if memory_id in rollback.skipped:  # the extraction got there first: its text stands
            assert text == f"later rewrote {memory_id}"
        else:  # reverted to the pre-run text; the extraction's stale write, if any, was dropped
            assert text in (f"fact {memory_id}", f"later rewrote {memory_id}")
            if text == f"later rewrote {memory_id}":
                # the extraction rewrote the restored record after the rollback: a legitimate later change
                assert memory_id in extraction.updated
    assert runs.get(run.run_id).rolled_back
