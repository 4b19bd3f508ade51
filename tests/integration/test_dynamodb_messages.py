"""DynamoMessageStore against moto's DynamoDB server: idempotent puts, order, the nightly window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memorybot import tables
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.core.record.domain import Message, jst_day, snowflake_at, snowflake_time

# 15:00 UTC is midnight in Japan: the JST day changes here.
JST_MIDNIGHT = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)


@pytest.fixture
def store(dynamo):
    client, settings = dynamo
    return DynamoMessageStore(client, settings)


def at(when: datetime, channel: str = "c1", sequence: int = 0, author: str = "u1", bot: bool = False) -> Message:
    return Message(channel, snowflake_at(when, sequence), author, f"name-{author}", f"said at {when.isoformat()}", bot)


def test_putting_the_same_message_again_changes_nothing(store, dynamo):
    first = at(JST_MIDNIGHT)
    store.put(first)
    store.put(Message(first.channel_id, first.message_id, "u9", "someone else", "an edited copy", True))

    assert store.recent("c1", 10) == [first]
    client, settings = dynamo
    assert client.scan(TableName=settings.table(tables.MESSAGES))["Count"] == 1


def test_the_stored_item_carries_its_jst_day_and_a_numeric_id(store, dynamo):
    m = at(JST_MIDNIGHT - MS)  # 23:59:59.999 JST on the 20th
    store.put(m)
    client, settings = dynamo
    [item] = client.scan(TableName=settings.table(tables.MESSAGES))["Items"]
    assert item["jst_day"] == {"S": "2026-11-20"} == {"S": jst_day(m.created_at)}
    assert item["message_id"] == {"N": m.message_id}
    assert item["is_bot"] == {"BOOL": False}


def test_recent_returns_the_newest_of_one_channel_oldest_first(store):
    mine = [at(JST_MIDNIGHT + timedelta(seconds=n), "c1", author=f"u{n % 3}", bot=n % 4 == 0) for n in range(8)]
    theirs = [at(JST_MIDNIGHT + timedelta(seconds=n, milliseconds=500), "c2") for n in range(8)]
    for m in reversed(mine + theirs):  # stored out of order on purpose
        store.put(m)

    assert store.recent("c1", 5) == mine[-5:]
    assert store.recent("c1", 50) == mine
    assert store.recent("c1", 0) == []
    assert store.recent("nobody", 5) == []
    # up to a message (the bot's reply): what came after it belongs to later turns
    assert store.recent("c1", 3, up_to=mine[4].message_id) == mine[2:5]
    assert store.recent("c1", 50, up_to=mine[0].message_id) == mine[:1]


def test_between_includes_the_start_excludes_the_end_and_spans_a_jst_day_and_channels(store):
    start = JST_MIDNIGHT - timedelta(hours=1)  # 23:00 JST on the 20th
    end = JST_MIDNIGHT + timedelta(hours=1)  # 01:00 JST on the 21st
    before_start = at(start - MS, "c1")
    on_start = at(start, "c2")
    last_of_day = at(JST_MIDNIGHT - MS, "c1")
    last_of_day_other_channel = at(JST_MIDNIGHT - MS, "c2", sequence=1)
    first_of_next_day = at(JST_MIDNIGHT, "c2")
    just_before_end = at(end - MS, "c1", sequence=7)
    on_end = at(end, "c2")
    everything = [
        before_start,
        on_start,
        last_of_day,
        last_of_day_other_channel,
        first_of_next_day,
        just_before_end,
        on_end,
    ]
    for m in everything:
        store.put(m)

    window = store.between(start, end)

    assert window == [on_start, last_of_day, last_of_day_other_channel, first_of_next_day, just_before_end]
    assert {jst_day(m.created_at) for m in window} == {"2026-11-20", "2026-11-21"}
    assert store.between(end, start) == []
    assert store.between(start, start) == []


def test_between_rounds_a_sub_millisecond_start_up(store):
    whole = JST_MIDNIGHT + timedelta(seconds=1)
    earlier, later = at(whole), at(whole + MS)
    store.put(earlier)
    store.put(later)

    assert store.between(whole + timedelta(microseconds=500), whole + timedelta(seconds=1)) == [later]
    assert store.between(whole, whole + timedelta(microseconds=500)) == [earlier]


def test_between_covers_several_days(store):
    days = [at(JST_MIDNIGHT + timedelta(days=d, hours=3), f"c{d % 2}") for d in range(4)]
    for m in days:
        store.put(m)
    assert store.between(JST_MIDNIGHT, JST_MIDNIGHT + timedelta(days=4)) == days
    assert store.between(JST_MIDNIGHT + timedelta(days=1), JST_MIDNIGHT + timedelta(days=3)) == days[1:3]


@pytest.mark.parametrize("message_id", ["18446744073709551615", "12345678901234567891", "10000000000000000001"])
def test_twenty_digit_snowflakes_round_trip_exactly(store, message_id):
    m = Message("c1", message_id, "u1", "name", "hello from the future")
    store.put(m)
    when = snowflake_time(message_id)

    assert store.recent("c1", 1) == [m]
    assert store.between(when, when + MS) == [m]
    assert store.between(when + MS, when + 2 * MS) == []


def line(n: int, author: str, of: str, *, channel: str = "c1", bot: bool = False, scope: str = "guild:1") -> Message:
    when = JST_MIDNIGHT + timedelta(seconds=n)
    return Message(channel, snowflake_at(when, n), author, f"name-{author}", f"line {n}", bot, scope, of)


def test_a_message_carries_its_scope_and_only_a_conversation_line_carries_its_conversation(store, dynamo):
    mine, history = line(1, "u1", "u1"), line(2, "u2", "")
    store.put(mine)
    store.put(history)
    client, settings = dynamo
    items = {i["author_id"]["S"]: i for i in client.scan(TableName=settings.table(tables.MESSAGES))["Items"]}
    assert items["u1"]["scope"] == {"S": "guild:1"} and items["u2"]["scope"] == {"S": "guild:1"}
    assert (items["u1"]["conversation_of"], items["u1"]["conversation"]) == ({"S": "u1"}, {"S": "c1#u1"})
    assert "conversation" not in items["u2"] and "conversation_of" not in items["u2"]  # by_conversation stays sparse
    assert store.recent("c1", 10) == [mine, history]


def test_conversation_is_the_persons_own_lines_and_the_bots_replies_to_them_only(store):
    lines = [
        line(1, "u1", "u1"),  # alice to the bot
        line(2, "bot", "u1", bot=True),  # the bot's reply to alice
        line(3, "u2", "u2"),  # bob to the bot
        line(4, "bot", "u2", bot=True),  # the bot's reply to bob
        line(5, "u2", ""),  # history
        line(6, "u1", "u1", channel="c2"),  # alice in another channel
        line(7, "u1", "u1"),
        line(8, "bot", "u1", bot=True),
    ]
    for m in reversed(lines):
        store.put(m)
    alice = [lines[i] for i in (0, 1, 6, 7)]
    assert store.conversation("c1", "u1", 10) == alice
    assert store.conversation("c1", "u1", 3) == alice[-3:]
    assert store.conversation("c1", "u1", 10, up_to=lines[6].message_id) == alice[:3]
    assert store.conversation("c1", "u2", 10) == lines[2:4]
    assert store.conversation("c2", "u1", 10) == [lines[5]]
    assert store.conversation("c1", "u3", 10) == [] and store.conversation("c1", "u1", 0) == []


def test_of_person_finds_the_bots_replies_by_the_person_they_answer_even_with_their_own_lines_gone(store):
    """A reply stored after an erasure (the turn was in flight) or left by an interrupted one: the
    person's own lines are gone, and a later erasure must still find every reply to them."""
    lines = [
        line(1, "u1", "u1"),  # alice to the bot, in c1 (erased below)
        line(2, "bot", "u1", bot=True),  # the bot's reply to alice, in c1
        line(3, "bot", "u1", channel="c2", bot=True),  # a reply to alice in a channel where she has no line left
        line(4, "u2", "u2"),  # bob to the bot
        line(5, "bot", "u2", bot=True),  # the bot's reply to bob: never alice's
        line(6, "u1", ""),  # alice's ordinary channel message (history)
    ]
    for m in lines:
        store.put(m)
    assert store.of_person("u1") == [lines[i] for i in (0, 1, 2, 5)]
    store.delete(lines[0])
    store.delete(lines[5])
    assert store.of_person("u1") == [lines[1], lines[2]]  # found by the person they answer, in both channels
    assert store.of_person("u2") == lines[3:5]
    assert store.of_person("u3") == []


def test_a_put_says_whether_it_stored_the_message_and_a_retry_of_its_own_write_still_counts(store, dynamo):
    first = line(1, "u1", "u1")
    assert store.put(first) is True
    assert store.put(first) is False  # the same interaction again: the first copy stands

    # botocore resends a PutItem whose answer was lost: the resend finds its own copy, which is still "stored".
    client, _ = dynamo
    resent: list[str] = []

    def resend_once(response, operation, **_):
        if operation.name == "PutItem" and not resent:
            resent.append(operation.name)
            return 0  # retry at once, with the same request
        return None

    client.meta.events.register("needs-retry.dynamodb.PutItem", resend_once)
    try:
        assert store.put(line(2, "u1", "u1")) is True and resent == ["PutItem"]
    finally:
        client.meta.events.unregister("needs-retry.dynamodb.PutItem", resend_once)
    assert store.recent("c1", 10) == [first, line(2, "u1", "u1")]
