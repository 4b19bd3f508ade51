"""Faults in the rollback on the real DynamoDB stores (moto's, served in this process: faults.InProcessDynamo).

A finished nightly run with adds, updates (one record twice), deletes and decay deletes
across two users, one of its adds changed again after the run, and an outsider. A
failure is injected at every DynamoDB request of the rollback, one at a time, then in
random combinations. After each: every change has exactly one ledger row, no partial
change, the outsider untouched; the retry (no fault) ends in exactly the state a clean
rollback leaves, the run is marked rolled back once, and a third call is refused.
A fault during a dry run changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import Clock, memory, owner
from faults import (
    InjectedFault,
    LostAnswers,
    RequestFaults,
    Snapshot,
    assert_every_change_has_exactly_one_ledger_row,
    fresh_tables,
    put_tables_items,
    scan,
    tables_items,
)
from hypothesis_profiles import examples
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_runs import DynamoRunStore
from memorybot.core.record.changes import RUN_LEDGER_OWNER, Change, RunSummary
from memorybot.core.record.domain import JST, Action, Actor, Memory, Owner
from memorybot.core.rights.rollback import ROLLBACK_LEASE, Outcome, Rollback

# Profiles in one server; oscar is alice's namesake id in ANOTHER server: never the run's.
ALICE, BOB, OSCAR = owner("alice", "guild:1"), owner("bob", "guild:1"), owner("alice", "guild:2")
RUN_AT = datetime(2026, 11, 30, 3, 0, tzinfo=JST)
SEEDED = datetime(2026, 10, 1, 12, 0, tzinfo=JST)
SEED = {
    (ALICE, "aaaa2"): "Plays the cello",  # updated twice by the run
    (ALICE, "aaaa3"): "Likes natto",  # deleted by the run
    (ALICE, "aaaa4"): "Has an exam this week",  # decayed by the run
    (BOB, "bbbb2"): "Has a cat",  # updated by the run
    (BOB, "bbbb3"): "Has a dentist appointment tomorrow",  # decayed by the run
    (OSCAR, "oooo2"): "Likes jazz",  # never touched
}


@dataclass
class World:
    client: object
    config: object
    clock: Clock
    faults: RequestFaults
    unhooked: object

    def rollback(self) -> Rollback:
        return Rollback(
            DynamoMemoryStore(self.client, self.config, clock=self.clock),
            DynamoRunStore(self.client, self.config),
            clock=self.clock,
        )

    def snapshot(self) -> Snapshot:
        return Snapshot.take(self.client, self.config)

    def run_item(self) -> dict:
        [item] = [
            i for i in scan(self.unhooked, self.config.table_names["nightly_runs"]) if i["run_key"]["S"] == "run#1"
        ]
        return item


# The world's items, by table (its name without the prefix), and its clock's time once made: made
# through the stores once, then copied into every new world's tables (a loop makes one a position).
_MADE: dict[str, dict] = {}


def new_world(moto_in_process) -> World:
    """The same finished run on fresh tables, every time (fixed ids, a stepping clock)."""
    client, config = fresh_tables(moto_in_process)
    if not _MADE:
        clock = Clock(RUN_AT)
        make_world(client, config, clock)
        _MADE["items"] = tables_items(client, config)
        _MADE["now"] = {"at": clock.now}
    else:
        put_tables_items(client, config, _MADE["items"])
        clock = Clock(_MADE["now"]["at"])  # where the making left it
    return World(client, config, clock, RequestFaults(client), moto_in_process.client())


def make_world(client, config, clock: Clock) -> None:
    """The run and what followed it, through the stores' own writes."""
    memories = DynamoMemoryStore(client, config, clock=clock)
    runs = DynamoRunStore(client, config)
    for (who, memory_id), text in SEED.items():
        seeded = memory(who.user_id, memory_id, text, at=SEEDED, scope=who.scope)
        memories.apply(Change(Action.ADD, None, seeded, "seed"), actor=Actor.EXTRACTION)

    run = runs.claim("2026-11-29", clock())
    current = {key: memories.get(*key) for key in SEED}

    def change(action: Action, key: tuple[Owner, str], text: str | None, reason: str) -> None:
        before = current.get(key)
        after = None
        if text is not None:
            at = clock()
            after = Memory(key[0].user_id, key[1], text, before.created_at if before else at, at, scope=key[0].scope)
        memories.apply(Change(action, before, after, reason), actor=Actor.NIGHTLY, run_id=run.run_id)
        current[key] = after

    for user in (ALICE, BOB):
        memories.read_profile(user, actor=Actor.NIGHTLY, reason="nightly", limit=10, run_id=run.run_id)
    change(Action.UPDATE, (ALICE, "aaaa2"), "Plays the cello in an orchestra", "jev verdict: update")
    change(Action.DELETE, (ALICE, "aaaa3"), None, "jev verdict: delete")
    change(Action.ADD, (ALICE, "aaaa5"), "Moved to Osaka", "jev: add")
    change(Action.UPDATE, (ALICE, "aaaa2"), "Plays the cello in an orchestra in Osaka", "jev verdict: update")
    change(Action.ADD, (BOB, "bbbb5"), "Adopted a dog", "jev: add")
    change(Action.UPDATE, (BOB, "bbbb2"), "Has a cat and a dog", "jev verdict: update")
    change(Action.DELETE, (ALICE, "aaaa4"), None, "nightly decay: jev review delete")
    change(Action.DELETE, (BOB, "bbbb3"), None, "nightly decay: jev review delete")
    runs.finish(replace(run, finished_at=clock(), worked_until=None, summary=RunSummary(added=["aaaa5", "bbbb5"])))
    # After the run, a later extraction changes bob's new memory: the rollback must leave it.
    later = current[(BOB, "bbbb5")]
    memories.apply(
        Change(
            Action.UPDATE,
            later,
            replace(later, text="Adopted a dog named Pochi", updated_at=clock()),
            "jev verdict: update",
        ),
        actor=Actor.EXTRACTION,
    )


def texts(snapshot: Snapshot) -> dict[tuple[Owner, str], str]:
    return {key: m.text for key, m in snapshot.memories.items()}


def rollback_rows(before: Snapshot, after: Snapshot) -> list:
    return [e for e in after.ledger if e not in before.ledger]


def assert_invariants(before: Snapshot, after: Snapshot) -> None:
    assert_every_change_has_exactly_one_ledger_row(before, after)
    rows = rollback_rows(before, after)
    assert all(e.action is Action.ROLLBACK and e.actor is Actor.NIGHTLY and e.run_id == 1 for e in rows)
    assert all(e.owner in (ALICE, BOB) for e in rows if e.memory_ids)
    # The rollback's own row: at most one, and only once the run is marked.
    assert len([e for e in rows if e.user_id == RUN_LEDGER_OWNER and not e.memory_ids]) <= 1
    assert {k: m for k, m in after.memories.items() if k[0] == OSCAR} == {
        k: m for k, m in before.memories.items() if k[0] == OSCAR
    }
    assert after.memories[(BOB, "bbbb5")] == before.memories[(BOB, "bbbb5")]  # changed after the run: never touched


@pytest.fixture(scope="module")
def clean(moto_in_process):
    """A clean rollback: its request count, its final memories and how many rollback rows it writes."""
    world = new_world(moto_in_process)
    before = world.snapshot()
    result = world.rollback().run()
    requests = world.faults.count
    after = world.snapshot()
    assert result.outcome is Outcome.DONE and result.run_id == 1
    assert_invariants(before, after)
    assert texts(after) == {
        **SEED,
        (BOB, "bbbb5"): "Adopted a dog named Pochi",  # the later change stands
    }
    assert sorted(result.reverted) == ["aaaa2", "aaaa3", "aaaa4", "aaaa5", "bbbb2", "bbbb3"]
    assert result.skipped == ["bbbb5"]
    assert world.rollback().run().outcome is Outcome.ALREADY
    return requests, after.memories, len(rollback_rows(before, after))


def test_the_clean_rollback_reverts_every_kind_of_change(clean):
    requests, _, rows = clean
    # two updates of one record, one each for the others (the skipped add has none), and the
    # rollback's own row
    assert rows == 7 + 1
    # counter and run, the lease, the run's rows, a read and a write per revert, the skipped
    # record's read, the mark (with the rollback's own row, one transaction)
    assert requests == 2 + 1 + 1 + 2 * 7 + 1 + 1


def retry_until_done(world: World, k: object, *, immediate: bool = True) -> None:
    """The operator retries. A failed rollback gives its lease back, so the retry proceeds at
    once; only if giving it back failed too (``immediate`` False) does it wait for the expiry."""
    result = world.rollback().run()
    if result.outcome is Outcome.BUSY and not immediate:
        assert world.run_item().get("lease_owner"), f"fault {k}: busy without a lease"
        world.clock.now += ROLLBACK_LEASE
        result = world.rollback().run()
    assert result.outcome is Outcome.DONE, f"fault {k}: the retry answered {result.outcome}"


def assert_done_like_clean(world: World, before: Snapshot, clean_memories, clean_rows: int, k: object) -> None:
    final = world.snapshot()
    assert_invariants(before, final)
    assert final.memories == clean_memories, f"fault {k}: the retry did not converge"
    # Each record reverted once across both attempts: as many rollback rows as a clean rollback.
    assert len(rollback_rows(before, final)) == clean_rows
    item = world.run_item()
    assert item["rolled_back"]["BOOL"] is True and "lease_owner" not in item
    assert world.rollback().run().outcome is Outcome.ALREADY  # and the third call is refused


def test_a_failure_at_every_rollback_request_keeps_the_invariants_and_the_retry_converges(moto_in_process, clean):
    requests, clean_memories, clean_rows = clean
    busy_after = []
    for k in range(1, requests + 1):
        world = new_world(moto_in_process)
        before = world.snapshot()
        world.faults.reset({k})
        with pytest.raises(InjectedFault):
            world.rollback().run()
        failed_op = world.faults.operations[k - 1]
        after = world.snapshot()
        assert_invariants(before, after)
        assert world.run_item()["rolled_back"]["BOOL"] is False
        world.faults.reset()
        if world.run_item().get("lease_owner"):
            busy_after.append((k, failed_op))
        retry_until_done(world, k)
        assert_done_like_clean(world, before, clean_memories, clean_rows, k)
    # Whichever request failed, the lease was given back: the operator's retry proceeds at once.
    assert busy_after == []


def test_a_lost_answer_at_every_write_of_the_rollback_converges(moto_in_process, clean):
    """The write reaches the table, then the rollback gets an error: no record is reverted
    twice, and the operator's retry ends where a clean rollback does."""
    _, clean_memories, clean_rows = clean
    world = new_world(moto_in_process)
    lost = LostAnswers(world.client)
    world.rollback().run()
    writes = lost.writes()
    kinds = [lost.operations[k - 1] for k in writes]
    # the lease, the reverts, the mark with the rollback's own row
    assert kinds == ["UpdateItem"] + ["TransactWriteItems"] * (clean_rows - 1) + ["TransactWriteItems"]
    absorbed = []
    for k, kind in zip(writes, kinds, strict=False):
        world = new_world(moto_in_process)
        before = world.snapshot()
        lost = LostAnswers(world.client)
        lost.fail_at = {k}
        try:
            result = world.rollback().run()
        except InjectedFault:
            result = None
        assert_invariants(before, world.snapshot())
        lost.reset()
        if result is not None:
            # A revert whose answer was lost: the store found its ledger row, so it committed.
            absorbed.append(kind)
            assert result.outcome is Outcome.DONE
            assert_done_like_clean(world, before, clean_memories, clean_rows, k)
            continue
        if k == writes[-1]:
            # The mark was stored: the run is rolled back, and the retry is told so.
            assert world.rollback().run().outcome is Outcome.ALREADY
            final = world.snapshot()
            assert final.memories == clean_memories and len(rollback_rows(before, final)) == clean_rows
            continue
        # (At the first write the lease was taken without an answer: it was given back anyway.)
        retry_until_done(world, k)
        assert_done_like_clean(world, before, clean_memories, clean_rows, k)
    assert absorbed == ["TransactWriteItems"] * (clean_rows - 1)  # the reverts; the lease and the mark fail loudly


def test_a_failure_at_every_request_of_a_dry_run_changes_nothing(moto_in_process, clean):
    _, clean_memories, _ = clean
    world = new_world(moto_in_process)
    world.faults.reset()
    preview = world.rollback().run(dry_run=True)
    assert preview.outcome is Outcome.PREVIEW and preview.skipped == ["bbbb5"]
    requests = world.faults.count
    assert set(world.faults.operations) <= {"GetItem", "Query"}  # reads only
    for k in range(1, requests + 1):
        world = new_world(moto_in_process)
        before = world.snapshot()
        run_before = world.run_item()
        world.faults.reset({k})
        with pytest.raises(InjectedFault):
            world.rollback().run(dry_run=True)
        # Nothing written, not even a lease: a real rollback could start at once.
        assert world.snapshot() == before and world.run_item() == run_before, f"dry run fault {k} changed something"
    world.faults.reset()
    assert world.rollback().run().outcome is Outcome.DONE
    assert world.snapshot().memories == clean_memories


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_combinations_of_faults_over_several_attempts_converge(moto_in_process, clean, data):
    requests, clean_memories, clean_rows = clean
    world = new_world(moto_in_process)
    before = world.snapshot()
    attempts = data.draw(st.lists(st.sets(st.integers(1, requests), min_size=1, max_size=3), min_size=1, max_size=3))
    for faults in attempts:  # each attempt fails somewhere; the lease may have to expire between them
        world.faults.reset(faults)
        try:
            outcome = world.rollback().run().outcome
        except InjectedFault:
            outcome = None
        assert_invariants(before, world.snapshot())
        if outcome is Outcome.BUSY:
            world.clock.now += ROLLBACK_LEASE
        if outcome is Outcome.DONE:
            break
    world.faults.reset()
    if world.run_item()["rolled_back"]["BOOL"] is False:
        retry_until_done(world, attempts, immediate=False)  # the give-back itself may have failed
    assert_done_like_clean(world, before, clean_memories, clean_rows, attempts)


def test_a_failed_mark_gives_the_lease_back_so_an_immediate_retry_finishes(moto_in_process):
    world = new_world(moto_in_process)
    world.rollback().run()
    last = world.faults.count  # the request that marks the run rolled back
    world = new_world(moto_in_process)
    world.faults.reset({last})
    with pytest.raises(InjectedFault):
        world.rollback().run()
    world.faults.reset()
    assert "lease_owner" not in world.run_item()
    assert world.rollback().run().outcome is Outcome.DONE


def test_a_lease_that_could_not_be_given_back_blocks_only_until_it_expires(moto_in_process):
    world = new_world(moto_in_process)
    world.rollback().run()
    last = world.faults.count  # the request that marks the run rolled back
    world = new_world(moto_in_process)
    world.faults.reset({last, last + 1})  # the mark fails, and so does giving the lease back
    with pytest.raises(InjectedFault):
        world.rollback().run()
    world.faults.reset()
    assert world.rollback().run().outcome is Outcome.BUSY
    world.clock.now += ROLLBACK_LEASE - timedelta(seconds=1)
    assert world.rollback().run().outcome is Outcome.BUSY
    world.clock.now += timedelta(seconds=2)
    assert world.rollback().run().outcome is Outcome.DONE
