"""The nightly Lambda handler with fakes behind the container: which day a delivery claims."""

from __future__ import annotations

import pytest

from fakes import FakeMemoryStore, FakeMessageStore, FakeRunStore, ScriptedChat, ScriptedJev
from memorybot import bootstrap
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.consolidation import window_for
from memorybot.domain import utcnow
from memorybot.handlers import nightly


@pytest.fixture
def runs(monkeypatch):
    runs = FakeRunStore()
    container = Container(
        Settings.from_env({}),
        memory_store=FakeMemoryStore(),
        message_store=FakeMessageStore(),
        run_store=runs,
        decision_model=ScriptedJev(),
        chat_model=ScriptedChat(),
    )
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    return runs


def deliver(event: dict) -> dict:
    return nightly.handler(event, LocalContext("memorybot-nightly"))


@pytest.mark.parametrize("time", ["2026-11-29T18:00:00Z", "2026-11-29T18:00:00", "2026-11-30T03:00:00+09:00"])
def test_the_schedules_time_names_the_day(runs, time):
    answer = deliver({"detail-type": "Scheduled Event", "time": time})
    assert answer["status"] == "done" and answer["dayLabel"] == "2026-11-29"
    assert runs.get(answer["runId"]).day_label == "2026-11-29"
    assert deliver({"time": "2026-11-29T18:09:00Z"}) == {"status": "already_claimed", "dayLabel": "2026-11-29"}


def test_without_a_time_the_run_is_as_of_now(runs):
    assert deliver({})["dayLabel"] == window_for(utcnow()).day_label


def test_a_time_that_does_not_parse_claims_nothing(runs):
    with pytest.raises(ValueError):
        deliver({"time": "tomorrow-ish"})
    assert runs.latest() is None
