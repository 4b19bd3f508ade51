"""At-least-once delivery: the same event delivered two or three times has the effect of one.

The real handlers run in-process with a Container over moto's server: the reply worker
(posts to the loopback Discord recorder), the extraction worker, the nightly function
(EventBridge's schedule event) and the admin function (a repeated rollback request).
Lambda retries a failed asynchronous invocation, so a delivery whose first attempt
failed half way is covered too.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta

import pytest

from fakes import Clock, memory, message
from faults import InjectedFault, RequestFaults, Snapshot, assert_every_change_has_exactly_one_ledger_row, fresh_tables
from frontdoor import ALICE, APP_ID, BOB, CHANNEL, SCHEDULE, SCOPE, admin_event, chat
from memorybot import bootstrap, tables
from memorybot.adapters import profile_index
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.invoker import LocalContext, LocalInvoker
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.night.window import STALE_AFTER, window_for
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import (
    GLOBAL_SCOPE,
    JST,
    Action,
    Actor,
    Message,
    Owner,
    parse_iso,
    snowflake_at,
    utcnow,
)
from memorybot.core.record.jobs import ExtractionJob, ReplyJob
from memorybot.handlers import admin, extraction, nightly, reply

DELIVERIES = [2, 3]
SECRET = "redelivery-admin-secret"


def reply_job(front, text: str) -> dict:
    """The job the interactions function hands the reply worker, after storing the user's message."""
    payload = chat(text)
    front.message_store.put(Message(CHANNEL, payload["id"], ALICE, "alice", text, scope=SCOPE, conversation_of=ALICE))
    return {
        "interaction_id": payload["id"],
        "token": payload["token"],
        "application_id": APP_ID,
        "channel_id": CHANNEL,
        "user_id": ALICE,
        "user_name": "alice",
        "scope": SCOPE,
    }


def changes(store, user: str) -> list:
    return [e for e in store.ledger_for(Owner(SCOPE, user)) if e.action is not Action.READ]


# ---- the reply worker -------------------------------------------------------------


@pytest.mark.parametrize("times", DELIVERIES)
def test_a_redelivered_reply_job_posts_once_stores_once_and_extracts_once(front, times):
    front.invoker = LocalInvoker({"extraction": extraction.handler})
    work = reply_job(front, "I started learning the violin")
    answers = [reply.handler(dict(work), LocalContext("memorybot-reply")) for _ in range(times)]
    assert front.invoker.drain(timeout=30) and front.invoker.failures == []
    front.invoker.shutdown()

    assert answers[0]["status"] == "replied" and all(a == answers[0] for a in answers)
    [edit] = front.recorder.of_kind("edit")  # one post to Discord
    assert edit.message_id == answers[0]["message_id"]
    bot_lines = [m for m in front.message_store.recent(CHANNEL, 20) if m.is_bot]
    assert [m.message_id for m in bot_lines] == [edit.message_id]  # one bot message stored
    assert [w for w, _ in front.chat_model.seen if w == "write_reply"] == ["write_reply"]
    # One extraction: Jev asked once, one add, one read by the reply and one by the extraction.
    assert len(front.decision_model.asked("worth")) == 1
    assert [(e.action, e.actor) for e in changes(front.memory_store, ALICE)] == [(Action.ADD, Actor.EXTRACTION)]
    reads = [e.actor for e in front.memory_store.ledger_for(Owner(SCOPE, ALICE)) if e.action is Action.READ]
    assert sorted(reads) == sorted([Actor.REPLY, Actor.EXTRACTION])


def test_reply_jobs_delivered_at_once_post_once(front):
    """Two copies running at the same time: one does the work, the other is refused and
    (as Lambda would) retried later, when it finds the stored result."""
    front.invoker = LocalInvoker({"extraction": extraction.handler})
    work = reply_job(front, "hello there")
    start = threading.Barrier(2)
    outcomes: list[object] = []

    def deliver():
        start.wait()
        try:
            outcomes.append(reply.handler(dict(work), LocalContext("memorybot-reply")))
        except Exception as exc:  # noqa: BLE001 - the copy that found the job in progress
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    retried = reply.handler(dict(work), LocalContext("memorybot-reply"))
    assert front.invoker.drain(timeout=30)
    front.invoker.shutdown()
    done = [o for o in outcomes if isinstance(o, dict)]
    assert done and all(o == retried for o in done)
    assert len(front.recorder.of_kind("edit")) == 1
    assert len(front.decision_model.asked("worth")) == 1


# ---- the extraction worker ----------------------------------------------------------


@pytest.mark.parametrize("times", DELIVERIES)
def test_a_redelivered_extraction_job_makes_one_set_of_changes(front, times):
    front.decision_model.verdicts = {"cccc2": "update", "dddd2": "delete"}
    for memory_id, text in (("cccc2", "lives in Kyoto"), ("dddd2", "exam on Friday")):
        seeded = memory(ALICE, memory_id, text, scope=SCOPE)
        front.memory_store.apply(Change(Action.ADD, None, seeded, "seed"), actor=Actor.EXTRACTION)
    work = reply_job(front, "I moved to Osaka")
    bot_id = snowflake_at(utcnow(), 77)
    front.message_store.put(
        Message(
            CHANNEL, bot_id, APP_ID, "memorybot", "Osaka is lovely", is_bot=True, scope=SCOPE, conversation_of=ALICE
        )
    )
    job = ExtractionJob.after_reply(ReplyJob.from_json(work), bot_id).to_json()
    answers = [extraction.handler(dict(job), LocalContext("memorybot-extraction")) for _ in range(times)]
    assert all(a == answers[0] for a in answers)
    assert len(answers[0]["added"]) == 1 and answers[0]["updated"] == ["cccc2"] and answers[0]["deleted"] == ["dddd2"]
    assert sorted(e.action.value for e in changes(front.memory_store, ALICE)) == [
        "add",
        "add",
        "add",
        "delete",
        "update",
    ]  # 2 seeds
    assert len(front.decision_model.asked("worth")) == 1
    assert changes(front.memory_store, BOB) == []


def offline_container(moto_server, monkeypatch) -> tuple[Container, RequestFaults]:
    """Fresh tables, offline models (a redone extraction refuses a fact already known), and
    a counted, failable DynamoDB client shared by the stores and the dedup table."""
    client, config = fresh_tables(moto_server)
    c = Container(config, dynamodb_client=client, decision_model=OfflineDecisionModel(), chat_model=OfflineChatModel())
    monkeypatch.setattr(bootstrap, "container", lambda: c)
    return c, RequestFaults(client)


def is_index_build(body: dict) -> bool:
    """A transaction that writes an owner's whole selection index (its header put, not updated)."""
    return any(
        item.get("Put", {}).get("Item", {}).get("memory_id", {}).get("S") == profile_index.HEADER_KEY
        for item in body.get("TransactItems", ())
    )


def test_an_extraction_job_that_failed_at_any_request_is_retried_to_one_set_of_changes(moto_server, monkeypatch):
    """Lambda retries a failed invocation (twice); a failure at any DynamoDB request of the
    first attempt, dedup table included, still ends with exactly one set of changes."""

    def prepare():
        c, faults = offline_container(moto_server, monkeypatch)
        seeded = memory(ALICE, "cccc2", "[offline] Plays the cello")
        c.memory_store.apply(Change(Action.ADD, None, seeded, "seed"), actor=Actor.EXTRACTION)
        c.message_store.put(
            message(ALICE, "good morning", at=utcnow() - timedelta(minutes=2), channel=CHANNEL, name="alice")
        )
        said = message(
            ALICE,
            "I play the cello in an orchestra now and I adopted a cat",
            at=utcnow() - timedelta(minutes=1),
            channel=CHANNEL,
            name="alice",
        )
        c.message_store.put(said)
        job = ExtractionJob(said.message_id, CHANNEL, ALICE, "alice", GLOBAL_SCOPE, said.message_id).to_json()
        return c, faults, job

    c, faults, job = prepare()
    faults.reset()  # count the job's requests only
    clean = extraction.handler(dict(job), LocalContext("memorybot-extraction"))
    requests = faults.count
    clean_state = Snapshot.take(c.dynamodb_client, c.settings)
    assert clean["updated"] == ["cccc2"] and clean["added"] == []
    clean_texts = sorted(m.text for m in clean_state.memories.values())
    assert clean_texts == ["[offline] Plays the cello in an orchestra now and adopted a cat"]

    # The written memory's vector, after its write (the person's record read again, then the vector
    # stored): a failure there is that vector's alone (the record stays written without one, for
    # the nightly backfill), not the job's.
    asked = list(enumerate(zip(faults.operations, faults.tables, strict=True), 1))
    # The vector is stored in a transaction of its own (with its selection index entry), the last.
    vector_write = max(k for k, (op, _) in asked if op == "TransactWriteItems")
    last_write = max(k for k, (op, _) in asked if op == "TransactWriteItems" and k < vector_write)
    vector_step = [("GetItem", c.settings.table(tables.PEOPLE)), ("TransactWriteItems", "")]
    vector_writes = [k for k, request in asked if k > last_write and request in vector_step]
    cello = (Owner(GLOBAL_SCOPE, ALICE), "cccc2")
    assert [asked[k - 1][1] for k in vector_writes] == vector_step
    assert clean_state.memories[cello].embedding is not None
    # The first transaction builds the selection index from the extraction's first read: derived
    # data, built by a later read if not by this one; its failure is not the job's.
    index_build = min(k for k, (op, _) in asked if op == "TransactWriteItems")
    assert index_build < last_write and is_index_build(faults.bodies[index_build - 1])
    assert [is_index_build(body) for body in faults.bodies].count(True) == 1
    outcomes = []
    for k in range(1, requests + 1):
        c, faults, job = prepare()
        before = Snapshot.take(c.dynamodb_client, c.settings)
        faults.reset({k})
        deliveries: list = []
        for attempt in range(3):  # the first attempt and Lambda's two retries
            try:
                deliveries.append(extraction.handler(dict(job), LocalContext("memorybot-extraction")))
            except Exception as exc:  # noqa: BLE001 - a failed attempt, retried
                deliveries.append(type(exc).__name__)
            if attempt == 0:
                failed_op = faults.operations[k - 1]
                # The profile is loaded beside worth (another thread): the requests before the
                # changes may come in another order than the clean run's, so what failed is told
                # by the request itself, not by its number.
                failed_build = is_index_build(faults.bodies[k - 1])
                faults.reset()
        final = Snapshot.take(c.dynamodb_client, c.settings)
        assert_every_change_has_exactly_one_ledger_row(before, final)
        assert sorted(m.text for m in final.memories.values()) == clean_texts, f"fault at request {k}"
        assert len([e for e in final.changes() if e not in before.changes()]) == 1, f"fault at request {k}"
        if failed_build:
            assert deliveries[0] == clean, "the turn's work is done"
            continue
        if k in vector_writes:
            assert deliveries[0] == clean, "the turn's work is done"
            assert final.memories[cello].embedding is None, "written without its vector"
            continue
        assert isinstance(deliveries[0], str), f"fault at request {k} went unnoticed"
        outcomes.append((failed_op, deliveries))
    # The last request stores the job's result: when it fails, the work is done but the dedup
    # record stays "in progress", so the retries are refused (until it expires) rather than rerun.
    assert outcomes[-1][0] == "UpdateItem" and outcomes[-1][1][1:] == ["IdempotencyAlreadyInProgressError"] * 2
    assert all(isinstance(d, dict) for _, deliveries in outcomes[:-1] for d in deliveries[1:])


# ---- the nightly function -----------------------------------------------------------


def jst(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=JST)


@pytest.fixture
def night(dynamo, monkeypatch, serialised_moto):
    """A day on moto: two speakers, a stale time-limited record; offline models."""
    client, config = dynamo
    config = Settings(table_names=config.table_names, plain_secrets={"MEMORYBOT_ADMIN_SECRET": SECRET})
    clock = Clock(jst(30, 3))
    memories = DynamoMemoryStore(client, config, clock=clock)
    messages = DynamoMessageStore(client, config)
    c = Container(
        config,
        dynamodb_client=client,
        memory_store=memories,
        message_store=messages,
        decision_model=OfflineDecisionModel(),
        chat_model=OfflineChatModel(),
    )
    monkeypatch.setattr(bootstrap, "container", lambda: c)
    messages.put(message("a", "I started learning the violin", at=jst(29, 9), name="alice"))
    messages.put(message("b", "I adopted a dog named Pochi", at=jst(29, 10), name="bob"))
    old = memory("a", "aaaa2", "[offline] Has an exam this week", at=jst(29, 0) - STALE_AFTER - timedelta(days=1))
    memories.apply(Change(Action.ADD, None, old, "seed"), actor=Actor.EXTRACTION)
    return c


def deliver_schedule(event: dict = SCHEDULE) -> dict:
    """One start of the state machine: its states' handlers in order, each with the previous answer."""
    context = LocalContext("memorybot-nightly")
    claimed = nightly.claim({"time": event["time"]}, context)
    if claimed["status"] != "claimed":
        return {"status": claimed["status"], "dayLabel": window_for(parse_iso(claimed["as_of"])).day_label}
    return redrive_from_plan(claimed)


def redrive_from_plan(claimed: dict) -> dict:
    context = LocalContext("memorybot-nightly")
    plan = nightly.plan(claimed, context)
    for entry in bootstrap.container().manifest_store.read(plan["manifest"]):
        nightly.speaker({"run_id": plan["run_id"], **entry}, context)
    finished = nightly.finish(nightly.review(plan, context), context)
    return {"status": finished["status"], "runId": finished["run_id"], "dayLabel": finished["day_label"]}


def nightly_changes(c) -> list:
    return [e for e in c.memory_store.ledger_for_run(1) if e.action is not Action.READ]


@pytest.mark.parametrize("times", DELIVERIES)
def test_a_redelivered_schedule_event_makes_one_run_and_one_set_of_changes(night, times):
    first = deliver_schedule()
    assert first["status"] == "done" and first["runId"] == 1
    once = sorted((e.action.value, e.user_id) for e in nightly_changes(night))
    assert once == [("add", "a"), ("add", "b"), ("delete", "a")]
    later = [deliver_schedule({**SCHEDULE, "time": f"2026-11-29T18:0{i}:00Z"}) for i in range(1, times)]
    assert later == [{"status": "already_claimed", "dayLabel": "2026-11-29"}] * (times - 1)
    assert sorted((e.action.value, e.user_id) for e in nightly_changes(night)) == once
    assert night.run_store.latest().run_id == 1 and night.run_store.get(2) is None


def test_schedule_events_delivered_at_once_make_one_run(night):
    start = threading.Barrier(3)
    answers: list[dict] = []

    def deliver():
        start.wait()
        answers.append(deliver_schedule())

    threads = [threading.Thread(target=deliver) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a["status"] for a in answers) == ["already_claimed", "already_claimed", "done"]
    assert night.run_store.latest().run_id == 1
    assert len(nightly_changes(night)) == 3


def test_a_failed_execution_is_redriven_once_and_later_starts_do_nothing(night):
    # Fail the request that stores the finished run: the changes are in, the run is not done.
    def fail_finish(params, **_):
        if "finished_at" in params.get("UpdateExpression", ""):
            raise InjectedFault("finishing the run")

    event = "before-parameter-build.dynamodb.UpdateItem"
    night.dynamodb_client.meta.events.register(event, fail_finish, unique_id="fail-finish")
    with pytest.raises(InjectedFault):
        deliver_schedule()
    night.dynamodb_client.meta.events.unregister(event, unique_id="fail-finish")
    assert night.run_store.get(1).finished_at is None
    changed_once = sorted((e.action.value, e.user_id) for e in nightly_changes(night))

    # A second start of the day does nothing (the claim is held for the execution's timeout) ...
    assert deliver_schedule() == {"status": "already_claimed", "dayLabel": "2026-11-29"}
    # ... the failed execution is redriven: every step answers from its mark, the finish completes.
    claimed = {
        "status": "claimed",
        "run_id": 1,
        "day_label": "2026-11-29",
        "as_of": SCHEDULE["time"].replace("Z", ".000000Z"),
    }
    second = redrive_from_plan(claimed)
    assert second["status"] == "done" and second["runId"] == 1
    assert deliver_schedule() == {"status": "already_claimed", "dayLabel": "2026-11-29"}
    assert sorted((e.action.value, e.user_id) for e in nightly_changes(night)) == changed_once
    assert night.run_store.get(1).finished_at is not None and night.run_store.get(2) is None


# ---- the admin function: a repeated rollback request -----------------------------------


def rollback_request(body: dict | None = None) -> tuple[int, dict]:
    response = admin.handler(admin_event("/memory/rollback", body, SECRET), LocalContext("memorybot-admin"))
    return response["statusCode"], json.loads(response["body"])


@pytest.mark.parametrize("times", DELIVERIES)
@pytest.mark.parametrize("body", [None, {"runId": 1}])
def test_a_repeated_rollback_request_rolls_back_once_then_409(night, times, body):
    deliver_schedule()
    status, answer = rollback_request(body)
    assert status == 200 and answer["runId"] == 1 and len(answer["reverted"]) == 3
    after_one = night.memory_store.ledger_for_run(1)
    for _ in range(times - 1):
        assert rollback_request(body) == (409, {"runId": 1, "alreadyRolledBack": True})
    assert night.memory_store.ledger_for_run(1) == after_one  # nothing reverted twice
    assert len([e for e in after_one if e.action is Action.ROLLBACK and e.memory_ids]) == 3
    assert len([e for e in after_one if e.action is Action.ROLLBACK and not e.memory_ids]) == 1  # the rollback's own
    assert night.run_store.get(1).rolled_back


def test_a_rollback_request_that_failed_half_way_is_finished_by_the_repeat_then_409(night):
    deliver_schedule()
    transactions = 0  # the reverts are the rollback's only transactions: fail the second one

    def fail_second_revert(model, **_):
        nonlocal transactions
        if model.name == "TransactWriteItems":
            transactions += 1
            if transactions == 2:
                raise InjectedFault("second revert")

    night.dynamodb_client.meta.events.register("before-call.dynamodb", fail_second_revert, unique_id="fail-revert")
    status, answer = rollback_request()
    night.dynamodb_client.meta.events.unregister("before-call.dynamodb", unique_id="fail-revert")
    assert status == 503 and "retry" in answer["error"]
    assert len([e for e in night.memory_store.ledger_for_run(1) if e.action is Action.ROLLBACK and e.memory_ids]) == 1

    status, answer = rollback_request()
    assert status == 200 and len(answer["reverted"]) == 3
    assert rollback_request() == (409, {"runId": 1, "alreadyRolledBack": True})
    assert len([e for e in night.memory_store.ledger_for_run(1) if e.action is Action.ROLLBACK and e.memory_ids]) == 3
    assert (
        night.memory_store.read_profile(Owner(GLOBAL_SCOPE, "a"), actor=Actor.COMMAND, reason="test", limit=10)[0].text
        == "[offline] Has an exam this week"
    )
