"""Property: for random runs, random later changes and a random interruption, the rollback
restores exactly what nobody touched since, leaves every later change standing, logs one
rollback row per revert, and a retry after an interruption ends where an unbroken rollback does."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import Clock, FakeMemoryStore, FakeRunStore
from hypothesis_profiles import examples
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory, Owner
from memorybot.core.rights.rollback import Outcome, Rollback

T = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
# The same ids for two people and for one person in two scopes: each (owner, id) is its own record.
OWNERS = [Owner("guild:1", "a"), Owner("guild:2", "a"), Owner("guild:1", "b")]
KEYS = [(who, f"id{n:03d}") for who in OWNERS for n in range(2)]

key_index = st.integers(0, len(KEYS) - 1)
step = st.tuples(key_index, st.booleans())  # (which record, update rather than delete when present)
plans = st.fixed_dictionaries(
    {
        "present": st.lists(st.booleans(), min_size=len(KEYS), max_size=len(KEYS)),
        "run": st.lists(step, max_size=12),
        "later": st.lists(step, max_size=5),
        "fail_at": st.one_of(st.none(), st.integers(1, 8)),
    }
)


class World:
    def __init__(self, plan: dict) -> None:
        self.clock = Clock(T)
        self.memories = FakeMemoryStore(self.clock)
        self.runs = FakeRunStore()
        for (who, memory_id), present in zip(KEYS, plan["present"], strict=False):
            if present:
                then = T - timedelta(days=9)
                self.memories.seed(Memory(who.user_id, memory_id, f"before {memory_id}", then, then, scope=who.scope))
        self.before_run = dict(self.memories.rows)
        run = self.runs.claim("2026-11-29", self.clock())
        self.run_rows = [self._step(k, update, actor=Actor.NIGHTLY, run_id=run.run_id) for k, update in plan["run"]]
        self.run = dataclasses.replace(run, finished_at=self.clock())
        self.runs.finish(self.run)
        self.touched_by_run = {KEYS[k] for k, _ in plan["run"]}
        self.touched_later = {KEYS[k] for k, _ in plan["later"]}
        for k, update in plan["later"]:
            self._step(k, update, actor=Actor.EXTRACTION)
        self.before_rollback = dict(self.memories.rows)

    def _step(self, k: int, update: bool, *, actor: Actor, run_id: int | None = None):
        who, memory_id = KEYS[k]
        current = self.memories.get(who, memory_id)
        now = self.clock()
        if current is None:
            change = Change(
                Action.ADD, None, Memory(who.user_id, memory_id, f"added at {now}", now, now, scope=who.scope), "add"
            )
        elif update:
            change = Change(
                Action.UPDATE, current, dataclasses.replace(current, text=f"updated at {now}", updated_at=now), "update"
            )
        else:
            change = Change(Action.DELETE, current, None, "delete")
        return self.memories.apply(change, actor=actor, run_id=run_id)

    def rollback(self, fail_at: int | None):
        rollback = Rollback(self.memories, self.runs, clock=self.clock)
        if fail_at is not None:
            applied = {"n": 0}

            def fail(change):
                applied["n"] += 1
                return applied["n"] == fail_at

            self.memories.fail_apply = fail
            try:
                rollback.run(self.run.run_id)
            except RuntimeError:
                pass
            self.memories.fail_apply = lambda change: False
        return rollback.run(self.run.run_id)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans)
def test_rollback_restores_what_nobody_touched_and_never_overwrites_a_later_change(plan):
    world = World(plan)
    result = world.rollback(plan["fail_at"])
    assert result.outcome is Outcome.DONE or (result.outcome is Outcome.ALREADY and plan["fail_at"] is not None)
    final = world.memories.rows

    for key in KEYS:
        if key not in world.touched_by_run:
            assert final.get(key) == world.before_rollback.get(key)  # not the run's: untouched
        elif key not in world.touched_later:
            assert final.get(key) == world.before_run.get(key)  # the run's only: fully undone
        else:
            # Changed again since: it stands. (Only a run that ended by deleting the record
            # may put it back, when the id is absent again: the design's rule for deletes.)
            newest = [e for e in world.run_rows if (e.owner, e.memory_ids[0]) == key][-1]
            if world.before_rollback.get(key) is not None or newest.action is not Action.DELETE:
                assert final.get(key) == world.before_rollback.get(key)

    rollback_rows = [e for e in world.memories.ledger if e.action is Action.ROLLBACK]
    assert all(e.actor is Actor.NIGHTLY and e.run_id == world.run.run_id for e in rollback_rows)
    assert len(rollback_rows) <= len(world.run_rows)
    for key in world.touched_by_run - world.touched_later:  # each of their run rows reverted exactly once
        rows = [e for e in world.run_rows if (e.owner, e.memory_ids[0]) == key]
        reverts = [e for e in rollback_rows if (e.owner, e.memory_ids[0]) == key]
        assert len(reverts) == len(rows)

    # an interrupted rollback, once retried, ends exactly where an unbroken one does
    if plan["fail_at"] is not None:
        unbroken = World(plan)
        unbroken.rollback(None)
        assert final == unbroken.memories.rows

    # and a second request changes nothing
    ledger = list(world.memories.ledger)
    assert Rollback(world.memories, world.runs, clock=world.clock).run(world.run.run_id).outcome is Outcome.ALREADY
    assert world.memories.ledger == ledger
