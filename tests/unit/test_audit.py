"""The audit trail has no holes: the nightly decay review logs what it reads, per person,
before any of it reaches the decision model."""

from __future__ import annotations

from datetime import timedelta

from fakes import memory, owner
from memorybot.core.night.consolidation import DECAY_READ_REASON
from memorybot.core.night.window import STALE_AFTER
from memorybot.core.record.domain import Action, Actor, Verdict
from unit.test_consolidation import NOW, Night


def test_the_decay_review_writes_a_read_row_per_person_with_the_run_id():
    night = Night()
    old = NOW - STALE_AFTER - timedelta(days=3)
    for user, memory_id in (("u1", "aaaa2"), ("u1", "bbbb2"), ("u2", "cccc2")):
        night.memories.seed(memory(user, memory_id, "an old fact", at=old))
    night.jev.default_review = Verdict.KEEP
    run = night.run()
    reads = [e for e in night.memories.ledger if e.action is Action.READ and e.reason == DECAY_READ_REASON]
    assert sorted((e.user_id, sorted(e.memory_ids)) for e in reads) == [("u1", ["aaaa2", "bbbb2"]), ("u2", ["cccc2"])]
    assert all(e.actor is Actor.NIGHTLY and e.run_id == run.run_id for e in reads)
    assert sorted(night.jev.asked("review")) == ["aaaa2", "bbbb2", "cccc2"]


def test_a_person_whose_read_row_cannot_be_written_is_not_reviewed_tonight():
    night = Night()
    old = NOW - STALE_AFTER - timedelta(days=3)
    night.memories.seed(memory("u1", "aaaa2", "an old fact", at=old), memory("u2", "cccc2", "another", at=old))
    logged = night.memories.log_read

    def failing_for_u1(owner, *args, **kwargs):
        if owner.user_id == "u1":
            raise RuntimeError("injected ledger failure")
        return logged(owner, *args, **kwargs)

    night.memories.log_read = failing_for_u1
    night.jev.default_review = Verdict.DELETE
    run = night.run()
    assert night.jev.asked("review") == ["cccc2"]  # u1's text never reached the model unlogged
    assert run.summary.decayed == ["cccc2"] and run.summary.failures >= 1
    assert (owner("u1"), "aaaa2") in night.memories.rows
