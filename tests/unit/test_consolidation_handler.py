"""The nightly step handlers (one Lambda per state) with fakes behind the container: which day a
start claims, payloads refused, a redrive after a failure mid-map runs only the remaining speakers."""

from __future__ import annotations

from datetime import datetime

import pytest

from fakes import (
    Clock,
    FakeMemoryStore,
    FakeMessageStore,
    FakePeopleStore,
    FakeRunStore,
    FakeServerStore,
    ScriptedChat,
    ScriptedJev,
    message,
)
from memorybot import bootstrap
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.record.domain import JST
from memorybot.core.record.jobs import BadJob
from memorybot.handlers import nightly

CONTEXT = LocalContext("memorybot-nightly")


@pytest.fixture
def night(monkeypatch):
    clock = Clock(datetime(2026, 11, 30, 3, 1, tzinfo=JST))
    container = Container(
        Settings.from_env({}),
        memory_store=FakeMemoryStore(clock),
        message_store=FakeMessageStore(),
        people_store=FakePeopleStore(),
        run_store=FakeRunStore(),
        decision_model=ScriptedJev(),
        chat_model=ScriptedChat(),
        server_store=FakeServerStore(),
    )
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    return container


@pytest.mark.parametrize("time", ["2026-11-29T18:00:00Z", "2026-11-29T18:00:00", "2026-11-30T03:00:00+09:00"])
def test_the_schedules_time_names_the_day(night, time):
    claimed = nightly.claim({"time": time}, CONTEXT)
    assert claimed["status"] == "claimed" and claimed["day_label"] == "2026-11-29"
    assert night.run_store.get(claimed["run_id"]).day_label == "2026-11-29"
    again = nightly.claim({"time": "2026-11-29T18:09:00Z"}, CONTEXT)
    assert again["status"] == "already_claimed" and again["run_id"] == 0


def test_a_time_that_does_not_parse_claims_nothing(night):
    with pytest.raises(ValueError):
        nightly.claim({"time": "tomorrow-ish"}, CONTEXT)
    assert night.run_store.latest() is None


@pytest.mark.parametrize(
    ("step", "payload"),
    [
        (nightly.claim, {}),
        (nightly.claim, {"time": 5}),
        (nightly.plan, {"status": "claimed", "run_id": "1", "day_label": "d", "as_of": "2026-11-29T18:00:00Z"}),
        (nightly.speaker, {"run_id": 1, "scope": "global", "user_id": "1", "messages": [["c", 5]]}),
        (nightly.speaker, {"run_id": 1, "scope": "global", "user_id": "1", "messages": [], "extra": 1}),
        (nightly.speaker_failed, {"run_id": 1, "scope": "global", "user_id": "1", "messages": []}),
        (nightly.review, [1, 2]),
        (nightly.finish, {"run_id": True, "day_label": "d", "as_of": "x", "manifest": "m", "speakers": 1}),
    ],
)
def test_every_step_refuses_a_payload_that_does_not_parse_before_touching_anything(night, step, payload):
    with pytest.raises(BadJob):
        step(payload, CONTEXT)
    assert night.run_store.runs == {} and night.run_store.marks == {} and night.memory_store.ledger == []


def _day(night, speakers: int) -> dict:
    for n in range(speakers):
        night.message_store.put(message(f"u{n}", f"u{n} says hello", at=datetime(2026, 11, 29, 9, n, tzinfo=JST)))
    claimed = nightly.claim({"time": "2026-11-29T18:00:00Z"}, CONTEXT)
    return nightly.plan(claimed, CONTEXT)


def test_the_steps_in_order_finish_the_run_through_their_handlers(night):
    plan = _day(night, 3)
    assert plan["speakers"] == 3
    items = [{"run_id": plan["run_id"], **e} for e in night.consolidator.manifests.read(plan["manifest"])]
    assert all(set(e) == {"scope", "user_id", "messages"} for e in night.consolidator.manifests.read(plan["manifest"]))
    assert "hello" not in str(night.consolidator.manifests.read(plan["manifest"]))  # ids, never text
    for item in items:
        assert nightly.speaker(item, CONTEXT)["status"] == "done"
    assert nightly.review(plan, CONTEXT) == plan
    finished = nightly.finish(plan, CONTEXT)
    run = night.run_store.get(plan["run_id"])
    assert finished == {"run_id": plan["run_id"], "day_label": "2026-11-29", "status": "done"}
    assert run.finished_at is not None and len(run.summary.added) == 3 and run.summary.failed_speakers == []


def test_a_redrive_after_a_failure_mid_map_runs_only_the_remaining_speakers(night):
    plan = _day(night, 4)
    items = [{"run_id": plan["run_id"], **e} for e in night.consolidator.manifests.read(plan["manifest"])]
    for item in items[:2]:
        nightly.speaker(item, CONTEXT)
    night.memory_store.fail_apply = lambda change: True  # the store goes down: the execution fails here
    with pytest.raises(RuntimeError):
        nightly.speaker(items[2], CONTEXT)
    night.memory_store.fail_apply = lambda change: False
    asked = len(night.decision_model.asked("worth"))

    # The redrive runs the map again: every child starts, the two done ones answer from their marks.
    for item in items:
        assert nightly.speaker(item, CONTEXT)["status"] == "done"
    assert len(night.decision_model.asked("worth")) == asked + 2  # only the remaining two asked the model
    nightly.review(plan, CONTEXT)
    run = night.run_store.get(nightly.finish(plan, CONTEXT)["run_id"])
    assert sorted(run.summary.added) == sorted({m.memory_id for m in night.memory_store.rows.values()})
    assert len(run.summary.added) == 4 and run.summary.failed_speakers == []


def test_a_poison_speaker_recorded_failed_is_counted_once_and_the_run_finishes(night):
    plan = _day(night, 2)
    poison, fine = [{"run_id": plan["run_id"], **e} for e in night.consolidator.manifests.read(plan["manifest"])]
    night.memory_store.fail_apply = lambda change: change.user_id == poison["user_id"]
    for _ in range(3):  # the first attempt and the retries
        with pytest.raises(RuntimeError):
            nightly.speaker(poison, CONTEXT)
    failure = {**poison, "error": {"Error": "RuntimeError", "Cause": '{"errorMessage": "..."}'}}
    assert nightly.speaker_failed(failure, CONTEXT)["status"] == "failed"
    assert nightly.speaker_failed(failure, CONTEXT)["status"] == "failed"  # the Catch's own retry: one mark
    assert nightly.speaker(fine, CONTEXT)["status"] == "done"
    nightly.review(plan, CONTEXT)
    nightly.finish(plan, CONTEXT)
    run = night.run_store.get(plan["run_id"])
    assert run.finished_at is not None
    assert run.summary.failed_speakers == [f"global#{poison['user_id']}"] and len(run.summary.added) == 1
    assert nightly.speaker(poison, CONTEXT)["status"] == "failed"  # a later redrive does not redo it
    assert nightly.finish(plan, CONTEXT)["status"] == "done" and night.run_store.get(plan["run_id"]) == run
