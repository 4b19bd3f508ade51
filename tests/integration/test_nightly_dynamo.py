"""The nightly and admin Lambda handlers on the real DynamoDB stores (moto's server), fakes only for the models."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from fakes import Clock, ScriptedChat, ScriptedJev, memory, message, owner
from frontdoor import SCHEDULE, admin_event
from memorybot import bootstrap
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.night.consolidation import DECAY_READ_REASON
from memorybot.core.night.window import STALE_AFTER, STALE_REVIEWS_PER_NIGHT, window_for
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import JST, Action, Actor, SourceRef, Verdict, parse_iso
from memorybot.core.rights import commands
from memorybot.handlers import admin, nightly

SECRET = "nightly-admin-secret"


def jst(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=JST)


class Deployed:
    """The container a deployed function would build, on moto, with scripted models."""

    def __init__(self, dynamo, monkeypatch) -> None:
        client, settings = dynamo
        settings = Settings(table_names=settings.table_names, plain_secrets={"MEMORYBOT_ADMIN_SECRET": SECRET})
        self.clock = Clock(jst(29, 12))
        self.memories = DynamoMemoryStore(client, settings, clock=self.clock)
        self.messages = DynamoMessageStore(client, settings)
        self.jev, self.chat = ScriptedJev(), ScriptedChat()
        self.container = Container(
            settings,
            dynamodb_client=client,
            memory_store=self.memories,
            message_store=self.messages,
            decision_model=self.jev,
            chat_model=self.chat,
        )
        monkeypatch.setattr(bootstrap, "container", lambda: self.container)

    def nightly(self, event: dict = SCHEDULE) -> dict:
        """The state machine's path through the step handlers, each with the previous one's answer
        (the Distributed Map's items as its ItemSelector builds them from the manifest)."""
        context = LocalContext("memorybot-nightly")
        claimed = nightly.claim({"time": event["time"]}, context)
        if claimed["status"] != "claimed":
            return {"status": claimed["status"], "dayLabel": window_for(parse_iso(claimed["as_of"])).day_label}
        plan = nightly.plan(claimed, context)
        for entry in self.container.manifest_store.read(plan["manifest"]):
            nightly.speaker({"run_id": plan["run_id"], **entry}, context)
        finished = nightly.finish(nightly.review(plan, context), context)
        return {"status": finished["status"], "runId": finished["run_id"], "dayLabel": finished["day_label"]}

    def rollback(self, body: dict | None = None, secret: str = SECRET) -> tuple[int, dict]:
        response = admin.handler(admin_event("/memory/rollback", body, secret), LocalContext("memorybot-admin"))
        return response["statusCode"], json.loads(response["body"])


@pytest.fixture
def deployed(dynamo, monkeypatch, serialised_moto):
    return Deployed(dynamo, monkeypatch)


SCOPE = "guild:1"


def test_the_scheduled_run_end_to_end_then_its_rollback(deployed):
    d = deployed
    # the day: two people and the bot; one message already belongs to the next night
    d.messages.put(message("a", "I started learning the violin", at=jst(29, 9), scope=SCOPE))
    d.messages.put(message("bot", "How exciting!", at=jst(29, 9, 1), bot=True, to="a", scope=SCOPE))
    d.messages.put(message("b", "We adopted a dog", at=jst(30, 2, 59), scope=SCOPE))
    d.messages.put(message("c", "next night's news", at=jst(30, 3), scope=SCOPE))
    # stale records of someone quiet: more than one night's worth of reviews
    for i in range(STALE_REVIEWS_PER_NIGHT + 2):
        d.memories.apply(
            Change(
                Action.ADD,
                None,
                memory("z", f"z{i:04d}"[-5:], f"old {i}", at=jst(29, 0) - STALE_AFTER - timedelta(days=30 - i)),
                "seed",
            ),
            actor=Actor.EXTRACTION,
        )
    d.jev.default_review = Verdict.DELETE

    answer = d.nightly()
    assert answer["status"] == "done" and answer["dayLabel"] == "2026-11-29"
    run = d.container.run_store.get(answer["runId"])
    assert run.finished_at is not None and run.diary == ScriptedChat().diary_answer
    assert len(run.summary.added) == 2 and run.summary.speakers == 2
    assert run.summary.decayed == [f"z{i:04d}"[-5:] for i in range(STALE_REVIEWS_PER_NIGHT)]
    exchanges = "\n".join(e.render() for e in d.jev.asked("worth"))
    assert (
        "violin" in exchanges and "dog" in exchanges and "next night" not in exchanges and "exciting" not in exchanges
    )
    assert len(d.memories.stale(jst(29, 0) - STALE_AFTER + timedelta(days=60), 100)) == 2 + 2  # 2 left + 2 added
    changes = [e for e in d.memories.ledger_for_run(run.run_id) if e.action is not Action.READ]
    assert len(changes) == 2 + STALE_REVIEWS_PER_NIGHT
    # learned where it was said: the speakers' profiles in the server's scope
    assert {e.owner for e in changes if e.action is Action.ADD} == {owner("a", SCOPE), owner("b", SCOPE)}
    assert all(e.actor is Actor.NIGHTLY for e in changes)

    # EventBridge delivers again, a few minutes late: nothing happens
    calls = len(d.jev.calls) + len(d.chat.seen)
    assert d.nightly({**SCHEDULE, "time": "2026-11-29T18:04:00Z"}) == {
        "status": "already_claimed",
        "dayLabel": "2026-11-29",
    }
    assert len(d.jev.calls) + len(d.chat.seen) == calls
    # + the two profile reads, and the decay review's read of the stale records it sent to Jev
    assert len(d.memories.ledger_for_run(run.run_id)) == len(changes) + 3
    [decay_read] = [e for e in d.memories.ledger_for_run(run.run_id) if e.reason == DECAY_READ_REASON]
    assert decay_read.action is Action.READ and decay_read.actor is Actor.NIGHTLY and decay_read.user_id == "z"
    assert len(decay_read.memory_ids) == STALE_REVIEWS_PER_NIGHT

    # the admin rolls it back: adds gone, decayed records back, then 409
    assert d.rollback({"dryRun": True})[1]["dryRun"] is True
    assert d.rollback(secret="wrong")[0] == 401
    status, body = d.rollback()
    assert status == 200 and body["runId"] == run.run_id and body["skipped"] == []
    assert sorted(body["reverted"]) == sorted(run.summary.added + run.summary.decayed)
    assert d.memories.read_profile(owner("a", SCOPE), actor=Actor.COMMAND, reason="test", limit=10) == []
    assert (
        len(d.memories.read_profile(owner("z"), actor=Actor.COMMAND, reason="test", limit=100))
        == STALE_REVIEWS_PER_NIGHT + 2
    )
    assert d.rollback() == (409, {"runId": run.run_id, "alreadyRolledBack": True})
    assert d.container.run_store.get(run.run_id).rolled_back


def test_a_forgotten_fact_is_not_relearned_at_three_and_the_unrelated_morning_fact_is(deployed):
    d = deployed
    hint = message("a", "my password hint is natto", at=jst(29, 9))
    d.messages.put(hint)
    d.messages.put(message("a", "I play the cello", at=jst(29, 9, 30)))  # unrelated, before the forget
    learned = replace(
        memory("a", "aaaaa", "password hint natto", at=jst(29, 9, 5)),
        sources=(SourceRef(hint.channel_id, hint.message_id),),
    )
    d.memories.apply(Change(Action.ADD, None, learned, "extraction"), actor=Actor.EXTRACTION)
    d.clock.now = jst(29, 12)
    assert commands.forget(d.memories, owner("a"), "aaaaa").outcome is commands.ForgetOutcome.FORGOTTEN
    d.messages.put(message("a", "lunch was good", at=jst(29, 13)))

    answer = d.nightly()
    assert answer["status"] == "done"
    assert [e.render() for e in d.jev.asked("worth")] == ["usera: I play the cello\nusera: lunch was good"]
    texts = [m.text for m in d.memories.read_profile(owner("a"), actor=Actor.COMMAND, reason="test", limit=10)]
    assert not any("natto" in t for t in texts)


def test_a_failed_read_of_the_day_fails_the_plan_and_a_redrive_of_the_plan_goes_on(deployed, monkeypatch):
    d = deployed
    d.messages.put(message("a", "hello", at=jst(29, 9)))

    def unavailable(start, end):
        raise ConnectionError("injected")

    monkeypatch.setattr(d.messages, "between", unavailable)
    context = LocalContext("memorybot-nightly")
    claimed = nightly.claim({"time": SCHEDULE["time"]}, context)
    with pytest.raises(ConnectionError):
        nightly.plan(claimed, context)  # the execution fails at the plan
    assert d.container.run_store.latest().finished_at is None
    assert nightly.claim({"time": SCHEDULE["time"]}, context)["status"] == "already_claimed"  # a second start: nothing
    monkeypatch.undo()
    monkeypatch.setattr(bootstrap, "container", lambda: d.container)
    plan = nightly.plan(claimed, context)  # the redrive starts again at the failed state
    for entry in d.container.manifest_store.read(plan["manifest"]):
        nightly.speaker({"run_id": plan["run_id"], **entry}, context)
    assert nightly.finish(nightly.review(plan, context), context)["status"] == "done"
