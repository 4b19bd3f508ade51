"""A memory's end (``valid_until``) through every place a memory goes: show marks it, why says it,
export writes it, a rollback (and an Undo) restores it with the rest of the record, DynamoDB
keeps it; import is in test_import.py, the shapes in test_memory_record.py."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from fakes import Clock, FakeMemoryStore, FakeRunStore, ScriptedChat, memory, message, owner
from frontdoor import ALICE, SCOPE, body_of, context, event, why
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.core.record.changes import Change
from memorybot.core.record.dates import CALENDAR_END, parse_day
from memorybot.core.record.domain import Action, Actor, Memory, iso
from memorybot.core.rights import commands, history
from memorybot.core.rights.rollback import Outcome, Rollback
from memorybot.core.turn.reply import ReplyWriter
from memorybot.handlers.interactions import handler

T = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
END = date(2026, 12, 31)
A = owner("a")


def planned(memory_id: str = "pkn22", text: str = "In Fukuoka for a month", until: date | None = END) -> Memory:
    return dataclasses.replace(memory("a", memory_id, text, at=T - timedelta(days=2)), valid_until=until)


def test_ended_is_after_the_last_day_only():
    m = planned()
    assert not m.ended(END) and not m.ended(END - timedelta(days=40)) and m.ended(END + timedelta(days=1))
    assert not planned(until=None).ended(date(2099, 1, 1))  # a durable fact never ends


def test_show_marks_the_end_and_export_writes_it():
    store = FakeMemoryStore(Clock(T))
    store.seed(planned(), memory("a", "tea22", "likes tea", at=T))
    assert commands.show(store, A) == ["tea22 likes tea", "pkn22 In Fukuoka for a month (until 2026-12-31)"]
    [scope] = commands.export(store, "a")["scopes"]
    assert {m["id"]: m["validUntil"] for m in scope["memories"]} == {"pkn22": "2026-12-31", "tea22": None}


def test_why_says_until_when_it_holds(front):
    now = datetime.now(UTC)
    m = Memory(ALICE, "pkn22", "In Fukuoka for a month", now, now, scope=SCOPE, valid_until=END)
    front.memory_store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    answer = body_of(handler(event(why("pkn22")), context()))["data"]["content"]
    assert "holds until 2026-12-31" in answer


def test_a_rollback_restores_the_end_an_update_had_moved_or_cleared():
    clock = Clock(T)
    store, runs = FakeMemoryStore(clock), FakeRunStore()
    store.seed(planned())
    run = runs.claim("2026-11-29", T)
    current = store.get(A, "pkn22")
    cleared = dataclasses.replace(current, text="Lives in Fukuoka now", valid_until=None, updated_at=clock())
    store.apply(Change(Action.UPDATE, current, cleared, "jev"), actor=Actor.NIGHTLY, run_id=run.run_id)
    runs.finish(dataclasses.replace(run, finished_at=clock()))
    result = Rollback(store, runs, clock=clock).run(run.run_id)
    assert result.outcome is Outcome.DONE and result.reverted == ["pkn22"]
    assert store.get(A, "pkn22").valid_until == END


def test_an_undo_restores_the_end_with_the_text():
    clock = Clock(T)
    store = FakeMemoryStore(clock)
    store.seed(planned())
    current = store.get(A, "pkn22")
    moved = dataclasses.replace(current, valid_until=date(2027, 1, 31), updated_at=clock())
    entry = store.apply(Change(Action.UPDATE, current, moved, "jev"), actor=Actor.EXTRACTION)
    assert history.undo(store, A, entry.key).outcome is history.UndoOutcome.UNDONE
    assert store.get(A, "pkn22").valid_until == END


def test_dynamodb_keeps_the_end_in_the_item_and_the_ledger(dynamo):
    client, settings = dynamo
    store = DynamoMemoryStore(client, settings, clock=Clock(T))
    m = dataclasses.replace(planned(), scope="guild:9")
    entry = store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    assert store.get(m.owner, "pkn22").valid_until == END
    assert store.ledger_entry(m.owner, entry.key).after.valid_until == END


LAST_DAY = date(9999, 12, 31)


@pytest.mark.parametrize(
    "zone", [UTC, ZoneInfo("Asia/Tokyo"), ZoneInfo("America/Los_Angeles"), ZoneInfo("Pacific/Kiritimati")]
)
def test_a_memory_ending_on_the_calendars_last_day_ends_at_its_last_moment(zone):
    m = planned(until=LAST_DAY)
    assert m.ends_at(zone) == CALENDAR_END and iso(CALENDAR_END) == "9999-12-31T23:59:59.999999Z"
    assert not m.ended(LAST_DAY)
    # The day before it still ends at its own midnight, wherever that falls in UTC.
    day_before = planned(until=LAST_DAY - timedelta(days=1)).ends_at(zone)
    assert day_before == datetime(9999, 12, 31, tzinfo=zone).astimezone(UTC) <= CALENDAR_END


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2026-12-31", date(2026, 12, 31)),
        ("9999-12-31", LAST_DAY),
        (" 2026-12-31", None),
        ("2026-12-31 ", None),
        ("2026-12-31\n", None),
        ("20261231", None),
        ("2026-W53-4", None),
        ("２０２６-12-31", None),
        ("2026-02-30", None),
        ("0000-01-01", None),
        (None, None),
    ],
)
def test_a_day_is_exactly_yyyy_mm_dd(text, day):
    assert parse_day(text) == day


def test_dynamodb_keeps_an_end_on_the_calendars_last_day_and_the_ending_review_reads_it_never(dynamo):
    client, settings = dynamo
    store = DynamoMemoryStore(client, settings, clock=Clock(T))
    m = dataclasses.replace(planned(until=LAST_DAY), scope="guild:9")
    store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    assert store.get(m.owner, "pkn22").valid_until == LAST_DAY
    assert store.ended(datetime(9999, 12, 31, 23, 0, tzinfo=UTC), 20) == []
    rewritten = dataclasses.replace(m, text="In Fukuoka for good", updated_at=T)
    store.apply(Change(Action.UPDATE, m, rewritten, "rewrite"), actor=Actor.EXTRACTION)
    assert store.get(m.owner, "pkn22").text == "In Fukuoka for good"


def test_the_reply_leaves_out_ended_memories_and_does_not_count_them_among_the_ten():
    # 23:30 UTC on 31 December is already 1 January in Tokyo: there the plan has ended, in UTC not yet.
    now = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    store = FakeMemoryStore(Clock(now))
    ended = [planned(f"fk{c}22", f"In Fukuoka for the festival {c}") for c in "abc"]
    live = [memory("a", f"lv{c}22", f"Fukuoka ramen fan number {c}", at=T) for c in "defghjkmnpqr"]
    store.seed(*ended, *live)
    said = [message("a", "Any Fukuoka tips?", at=now)]
    tokyo = ReplyWriter(store, ScriptedChat(), zone=ZoneInfo("Asia/Tokyo"), clock=lambda: now)
    system = tokyo.prompt_for(A, "alice", said)[0].content
    assert not any(m.text in system for m in ended)
    assert sum(m.text in system for m in live) == 10  # ten live ones, none of the places taken by an ended one
    [read] = [e for e in store.ledger_for(A) if e.action is Action.READ]
    assert not set(read.memory_ids) & {m.memory_id for m in ended}
    utc = ReplyWriter(store, ScriptedChat(), zone=UTC, clock=lambda: now)
    assert any(m.text in utc.prompt_for(A, "alice", said)[0].content for m in ended)  # its last day, in UTC
