"""DynamoRunStore against moto's DynamoDB server, and rollback on the real stores with real threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from fakes import Clock, memory, owner
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.admin_api import rollback_answer, run_record
from memorybot.core.record.changes import RUN_LEDGER_OWNER, Change, RunSummary
from memorybot.core.record.domain import NIGHTLY_MAX_DURATION, Action, Actor, Memory, iso
from memorybot.core.record.ports import RollbackClaim
from memorybot.core.rights.rollback import Outcome, Rollback

T = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
LEASE = timedelta(minutes=2)


@pytest.fixture
def runs(dynamo):
    client, settings = dynamo
    return DynamoRunStore(client, settings)


def test_claims_hand_out_increasing_ids_and_each_day_once(runs):
    assert runs.latest() is None
    first = runs.claim("2026-11-28", T)
    second = runs.claim("2026-11-29", T + timedelta(days=1))
    assert (first.run_id, second.run_id) == (1, 2)
    assert runs.claim("2026-11-28", T + timedelta(minutes=5)) is None  # its worker is still on it
    runs.finish(replace(first, finished_at=T + timedelta(minutes=6)))
    assert runs.claim("2026-11-28", T + timedelta(days=2)) is None  # done
    assert runs.latest().run_id == 2 and runs.get(1).day_label == "2026-11-28"
    assert runs.get(3) is None


def test_concurrent_claims_of_one_day_give_exactly_one_run(runs, serialised_moto):
    barrier = threading.Barrier(6)

    def claim(_):
        barrier.wait()
        return runs.claim("2026-11-29", T)

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(claim, range(6)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and runs.latest() == winners[0]


def test_concurrent_claims_of_different_days_get_distinct_ids_without_gaps(runs, serialised_moto):
    barrier = threading.Barrier(5)
    days = [f"2026-11-{d:02d}" for d in range(20, 25)]

    def claim(day):
        barrier.wait()
        return runs.claim(day, T)

    with ThreadPoolExecutor(5) as pool:
        results = list(pool.map(claim, days))
    assert sorted(r.run_id for r in results) == [1, 2, 3, 4, 5]
    assert {runs.get(r.run_id).day_label for r in results} == set(days)


def test_finish_stores_diary_summary_and_times(runs):
    run = runs.claim("2026-11-29", T)
    summary = RunSummary(added=["abcde"], decayed=["fghjk"], failures=1, model_calls=9, failed_speakers=["guild:1#2"])
    finished = replace(run, finished_at=T + timedelta(minutes=3), diary="静かな一日だった。", summary=summary)
    runs.finish(finished)
    assert runs.get(run.run_id) == replace(finished, worked_until=None)
    assert runs.claim("2026-11-29", T + timedelta(days=1)) is None


def test_an_unfinished_run_is_taken_over_once_its_worker_is_gone(runs):
    run = runs.claim("2026-11-29", T)
    assert run.worked_until == T + NIGHTLY_MAX_DURATION and run.in_progress(T)
    assert runs.claim("2026-11-29", T + timedelta(minutes=14)) is None  # still being worked on
    late = runs.claim("2026-11-29", T + timedelta(minutes=16))  # the worker timed out: a retry takes over
    assert late.run_id == run.run_id and late.worked_until == T + timedelta(minutes=31)
    runs.release(run.run_id)  # that worker failed and gave it up
    assert runs.get(run.run_id).worked_until is None and not runs.get(run.run_id).in_progress(T)
    again = runs.claim("2026-11-29", T + timedelta(minutes=17))
    assert again.run_id == run.run_id and runs.latest().run_id == run.run_id  # no new run for the day
    assert runs.claim_rollback(run.run_id, "op", T + timedelta(minutes=18), LEASE) is RollbackClaim.CLAIMED
    assert runs.mark_rolled_back(run.run_id, "op")
    runs.release(run.run_id)
    assert runs.claim("2026-11-29", T + timedelta(hours=1)) is None  # rolled back: never resumed


def test_concurrent_take_overs_of_an_abandoned_run_give_exactly_one(runs, serialised_moto):
    run = runs.claim("2026-11-29", T)
    runs.release(run.run_id)
    barrier = threading.Barrier(6)

    def claim(_):
        barrier.wait()
        return runs.claim("2026-11-29", T + timedelta(minutes=1))

    with ThreadPoolExecutor(6) as pool:
        results = [r for r in pool.map(claim, range(6)) if r is not None]
    assert [r.run_id for r in results] == [run.run_id]


def test_the_rollback_lease(runs):
    run = runs.claim("2026-11-29", T)
    assert runs.claim_rollback(99, "x", T, LEASE) is RollbackClaim.MISSING
    assert runs.claim_rollback(run.run_id, "first", T, LEASE) is RollbackClaim.CLAIMED
    assert runs.claim_rollback(run.run_id, "second", T + timedelta(seconds=30), LEASE) is RollbackClaim.BUSY
    assert runs.mark_rolled_back(run.run_id, "second") is False  # not the holder
    runs.release_rollback(run.run_id, "second")  # not the holder: no effect
    assert runs.claim_rollback(run.run_id, "second", T + timedelta(seconds=31), LEASE) is RollbackClaim.BUSY
    # the holder vanished: once its lease has expired, a retry takes over
    assert runs.claim_rollback(run.run_id, "second", T + LEASE + timedelta(seconds=1), LEASE) is RollbackClaim.CLAIMED
    assert runs.mark_rolled_back(run.run_id, "first") is False
    assert runs.mark_rolled_back(run.run_id, "second") is True
    assert runs.get(run.run_id).rolled_back
    assert runs.claim_rollback(run.run_id, "third", T + timedelta(days=1), LEASE) is RollbackClaim.DONE
    assert runs.mark_rolled_back(run.run_id, "second") is False


def test_released_lease_can_be_claimed_at_once(runs):
    run = runs.claim("2026-11-29", T)
    assert runs.claim_rollback(run.run_id, "first", T, LEASE) is RollbackClaim.CLAIMED
    runs.release_rollback(run.run_id, "first")
    assert runs.claim_rollback(run.run_id, "second", T, LEASE) is RollbackClaim.CLAIMED


# ---- rollback on the real stores ---------------------------------------------------------------


class World:
    def __init__(self, dynamo, memory_store_class=DynamoMemoryStore) -> None:
        client, settings = dynamo
        self.clock = Clock(T)
        self.memories = memory_store_class(client, settings, clock=self.clock)
        self.runs = DynamoRunStore(client, settings)
        self.memories.apply(
            Change(Action.ADD, None, memory("a", "upd00", "lives in Osaka", at=T - timedelta(days=3)), "seed"),
            actor=Actor.EXTRACTION,
        )
        self.memories.apply(
            Change(Action.ADD, None, memory("a", "del00", "works at Acme", at=T - timedelta(days=3)), "seed"),
            actor=Actor.EXTRACTION,
        )
        self.memories.apply(
            Change(Action.ADD, None, memory("z", "dec00", "had a cold", at=T - timedelta(days=40)), "seed"),
            actor=Actor.EXTRACTION,
        )
        self.original = {
            k: self.memories.get(owner(k[0]), k[1]) for k in [("a", "upd00"), ("a", "del00"), ("z", "dec00")]
        }
        self.run = self.runs.claim("2026-11-29", T)
        self.added = memory("a", "add00", "plays go", at=T)
        self.nightly(Change(Action.ADD, None, self.added, "jev: add"))
        before = self.memories.get(owner("a"), "upd00")
        self.updated = Memory("a", "upd00", "lives in Kyoto", before.created_at, T + timedelta(minutes=1))
        self.nightly(Change(Action.UPDATE, before, self.updated, "jev: update"))
        self.nightly(Change(Action.DELETE, self.memories.get(owner("a"), "del00"), None, "jev: delete"))
        self.nightly(Change(Action.DELETE, self.memories.get(owner("z"), "dec00"), None, "nightly decay"))
        self.run = replace(self.run, finished_at=T + timedelta(minutes=5))
        self.runs.finish(self.run)

    def nightly(self, change: Change) -> None:
        self.memories.apply(change, actor=Actor.NIGHTLY, run_id=self.run.run_id)

    def state(self) -> dict:
        keys = [("a", "add00"), ("a", "upd00"), ("a", "del00"), ("z", "dec00")]
        return {k: self.memories.get(owner(k[0]), k[1]) for k in keys}

    def rollback_rows(self):
        """The reverts' rows (the rollback's own run-level row is not one)."""
        return [
            e for e in self.memories.ledger_for_run(self.run.run_id) if e.action is Action.ROLLBACK and e.memory_ids
        ]

    def run_rows(self):
        return [e for e in self.memories.ledger_for_run(self.run.run_id) if e.user_id == RUN_LEDGER_OWNER]


def test_rollback_on_dynamodb_undoes_the_run_and_logs_each_revert(dynamo):
    w = World(dynamo)
    preview = Rollback(w.memories, w.runs).run(dry_run=True)
    assert w.rollback_rows() == [] and not w.runs.get(w.run.run_id).rolled_back

    result = Rollback(w.memories, w.runs).run()
    assert result.outcome is Outcome.DONE
    assert result.reverted == ["dec00", "del00", "upd00", "add00"] == preview.reverted  # newest first
    assert w.state() == {("a", "add00"): None, **w.original}
    rows = w.rollback_rows()
    assert len(rows) == 4 and all(r.actor is Actor.NIGHTLY and r.run_id == w.run.run_id for r in rows)
    run = w.runs.get(w.run.run_id)
    assert run.rolled_back and run.rollback_counts == {"reverted": 4, "skipped": 0}
    [own] = w.run_rows()  # the rollback's own row, committed with the mark, at the same time
    assert own.action is Action.ROLLBACK and own.at == run.rolled_back_at and "4 reverted, 0 skipped" in own.reason
    assert rollback_answer(Rollback(w.memories, w.runs).run(w.run.run_id)) == (
        409,
        {"runId": w.run.run_id, "alreadyRolledBack": True},
    )


def test_rollback_on_dynamodb_skips_what_changed_after_the_run(dynamo):
    w = World(dynamo)
    w.memories.apply(Change(Action.DELETE, w.added, None, "user asked to forget"), actor=Actor.COMMAND)
    later = Memory("a", "upd00", "lives in Nara", w.updated.created_at, T + timedelta(hours=2))
    w.memories.apply(Change(Action.UPDATE, w.updated, later, "later extraction"), actor=Actor.EXTRACTION)
    w.memories.apply(
        Change(Action.ADD, None, memory("a", "del00", "new fact, old id", at=T + timedelta(hours=2)), "add"),
        actor=Actor.EXTRACTION,
    )

    result = Rollback(w.memories, w.runs).run()
    assert result.reverted == ["dec00"] and sorted(result.skipped) == ["add00", "del00", "upd00"]
    assert w.memories.get(owner("a"), "add00") is None  # the forget stands
    assert w.memories.get(owner("a"), "upd00") == later
    assert w.memories.get(owner("a"), "del00").text == "new fact, old id"
    assert w.memories.get(owner("z"), "dec00") == w.original[("z", "dec00")]


def test_concurrent_rollbacks_of_one_run_on_real_threads_apply_exactly_once(dynamo, serialised_moto):
    w = World(dynamo)
    contenders = 6
    barrier = threading.Barrier(contenders)

    def roll(_):
        barrier.wait()
        return rollback_answer(Rollback(w.memories, w.runs).run(w.run.run_id))

    with ThreadPoolExecutor(contenders) as pool:
        answers = list(pool.map(roll, range(contenders)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] + [409] * (contenders - 1)
    (winner,) = [body for status, body in answers if status == 200]
    assert sorted(winner["reverted"]) == ["add00", "dec00", "del00", "upd00"]
    assert len(w.rollback_rows()) == 4  # one row per revert: nobody applied twice
    assert w.state() == {("a", "add00"): None, **w.original}


class FailingOnce(DynamoMemoryStore):
    """The real store, with the N-th apply failing as a network error would."""

    fail_at = 0

    def apply(self, change, **kw):
        type(self).fail_at -= 1
        if type(self).fail_at == 0:
            raise ConnectionError("injected: connection reset")
        return super().apply(change, **kw)


def test_an_interrupted_rollback_on_dynamodb_is_finished_by_a_retry(dynamo):
    w = World(dynamo, FailingOnce)
    FailingOnce.fail_at = 3  # two reverts land, the third dies
    with pytest.raises(ConnectionError):
        Rollback(w.memories, w.runs).run()
    assert len(w.rollback_rows()) == 2 and not w.runs.get(w.run.run_id).rolled_back

    result = Rollback(w.memories, w.runs).run()
    assert result.outcome is Outcome.DONE
    assert sorted(result.reverted) == ["add00", "dec00", "del00", "upd00"] and result.skipped == []
    assert len(w.rollback_rows()) == 4
    assert w.state() == {("a", "add00"): None, **w.original}


def test_a_rollback_that_reverts_nothing_still_leaves_its_row_and_its_time(dynamo):
    """A night that changed nothing, rolled back: nothing is reverted, yet the rollback is on
    record (its ledger row, and the run's time and counts)."""
    client, settings = dynamo
    memories, runs = DynamoMemoryStore(client, settings), DynamoRunStore(client, settings)
    quiet = runs.claim("2026-11-01", T)
    runs.finish(replace(quiet, finished_at=T + timedelta(minutes=1), worked_until=None))
    assert memories.ledger_for_run(quiet.run_id) == []
    result = Rollback(memories, runs).run(quiet.run_id)
    assert result.outcome is Outcome.DONE and result.reverted == [] and result.skipped == []
    run = runs.get(quiet.run_id)
    assert run.rolled_back and run.rolled_back_at is not None
    assert run.rollback_counts == {"reverted": 0, "skipped": 0}
    [own] = memories.ledger_for_run(quiet.run_id)
    assert own.user_id == RUN_LEDGER_OWNER and own.action is Action.ROLLBACK and own.memory_ids == ()
    assert own.at == run.rolled_back_at and "0 reverted, 0 skipped" in own.reason
    record = run_record(run)
    assert record["rolledBackAt"] == iso(run.rolled_back_at) and record["rollback"] == {"reverted": 0, "skipped": 0}
