"""``ports.MessageStore`` on DynamoDB: the channel log (the messages table).

A line is stored once (a redelivered event or a replayed /chat finds the first copy), with
the person's check in the same transaction when the caller gives one (``dynamodb_people``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from typing import Any

from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.record.conflicts import PersonRefused
from ..core.record.person import PersonCheck
from ..core.record.terms import DISCORD_EPOCH_MS, JST, Message, jst_day, snowflake_time
from .dynamodb_items import (
    REASON_CONDITION_FAILED,
    Item,
    bool_of,
    cancellation_code,
    conditional_write,
    flag,
    get_item,
    index_name,
    n,
    number_str,
    query_items,
    s,
    str_of,
    transact_or_find_committed,
)
from .dynamodb_people import person_check_item

BY_JST_DAY = index_name(tables.MESSAGES, "by_jst_day")
BY_CONVERSATION = index_name(tables.MESSAGES, "by_conversation")
BY_AUTHOR = index_name(tables.MESSAGES, "by_author")
BY_CONVERSATION_OF = index_name(tables.MESSAGES, "by_conversation_of")


def conversation_key(channel_id: str, user_id: str) -> str:
    return f"{channel_id}#{user_id}"


def message_key(message: Message) -> Item:
    return {"channel_id": s(message.channel_id), "message_id": n(message.message_id)}


def message_item(message: Message) -> Item:
    item: Item = {
        **message_key(message),
        "jst_day": s(jst_day(message.created_at)),
        "author_id": s(message.author_id),
        "author_name": s(message.author_name),
        "content": s(message.content),
        "is_bot": flag(message.is_bot),
        "scope": s(message.scope),
    }
    if message.conversation_of:  # only then: by_conversation stays sparse
        item["conversation_of"] = s(message.conversation_of)
        item["conversation"] = s(conversation_key(message.channel_id, message.conversation_of))
    return item


def message_from_item(item: Item) -> Message:
    return Message(
        channel_id=item["channel_id"]["S"],
        message_id=number_str(item["message_id"]),
        author_id=item["author_id"]["S"],
        author_name=str_of(item, "author_name"),
        content=str_of(item, "content"),
        is_bot=bool_of(item, "is_bot"),
        scope=item["scope"]["S"],
        conversation_of=str_of(item, "conversation_of"),
    )


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _first_snowflake_at_or_after(at: datetime) -> int:
    """The smallest snowflake whose time is >= ``at``.

    Snowflakes carry whole milliseconds, so ``at`` is rounded up, with exact integer
    arithmetic (a float timestamp could land one millisecond off).
    """
    ms = -((_UNIX_EPOCH - at) // _MS)  # ceiling division
    return max(ms - DISCORD_EPOCH_MS, 0) << 22


def _jst_days(first: date, last: date) -> Iterator[str]:
    day = first
    while day <= last:
        yield day.isoformat()
        day += timedelta(days=1)


class DynamoMessageStore:
    """``ports.MessageStore`` on the messages table."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._table = settings.table(tables.MESSAGES)
        self._people = settings.table(tables.PEOPLE)

    def put(self, message: Message, *, check: PersonCheck | None = None) -> bool:
        # A failed condition means already stored (a redelivered event or a replayed /chat): the
        # first copy stands, and that is success. The write carries a token of this call, so that
        # botocore's retry of a put whose answer was lost finds its own copy and still says "stored".
        token = secrets.token_hex(8)
        put = {
            "TableName": self._table,
            "Item": {**message_item(message), "stored_by": s(token)},
            "ConditionExpression": "attribute_not_exists(message_id) OR stored_by = :mine",
            "ExpressionAttributeValues": {":mine": s(token)},
        }
        if check is None:
            return conditional_write(self._client.put_item, **put)
        try:
            # With the person's check in the same transaction (its own token covers a retry).
            transact_or_find_committed(
                self._client,
                [{"Put": put}, person_check_item(self._people, check)],
                refused=lambda error: any(cancellation_code(error, i) == REASON_CONDITION_FAILED for i in (0, 1)),
                committed=lambda: (
                    (get_item(self._client, self._table, message_key(message)) or {}).get("stored_by") == s(token)
                ),
            )
        except ClientError as error:
            if cancellation_code(error, 1) == REASON_CONDITION_FAILED:
                raise PersonRefused(message.message_id) from error  # erased since the job began
            if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                return False
            raise
        return True

    def of_person(self, user_id: str) -> list[Message]:
        own = self._by_person(BY_AUTHOR, "author_id", user_id)
        # The bot's replies by the person they answer, not through the channels of the person's
        # own lines: a reply stored after those lines were erased is still found.
        conversations = [m for m in self._by_person(BY_CONVERSATION_OF, "conversation_of", user_id) if m.is_bot]
        return sorted(
            {(m.channel_id, m.message_id): m for m in own + conversations}.values(), key=lambda m: int(m.message_id)
        )

    def _by_person(self, index: str, attribute: str, user_id: str) -> list[Message]:
        items = query_items(
            self._client,
            TableName=self._table,
            IndexName=index,
            KeyConditionExpression=f"{attribute} = :user",
            ExpressionAttributeValues={":user": s(user_id)},
        )
        # The index is shared by key only: check the person again, so no other line slips in.
        return [m for m in map(message_from_item, items) if getattr(m, attribute) == user_id]

    def delete(self, message: Message) -> None:
        self._client.delete_item(TableName=self._table, Key=message_key(message))

    def recent(self, channel_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        return self._newest({"channel_id": channel_id}, limit, up_to=up_to, index=None)

    def conversation(self, channel_id: str, user_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        found = self._newest(
            {"conversation": conversation_key(channel_id, user_id)}, limit, up_to=up_to, index=BY_CONVERSATION
        )
        # The index is shared by key only: check the owner again, so no other line slips in.
        return [m for m in found if m.conversation_of == user_id and m.channel_id == channel_id]

    def _newest(self, key: dict[str, str], limit: int, *, up_to: str | None, index: str | None) -> list[Message]:
        """The newest ``limit`` messages under one partition key (of the table or an index), oldest first."""
        if limit <= 0:
            return []
        [(name, value)] = key.items()
        condition, values = f"{name} = :key", {":key": s(value)}
        if up_to is not None:
            condition, values = condition + " AND message_id <= :up_to", {**values, ":up_to": n(up_to)}
        # A global index cannot be read consistently; the table can.
        where = {"IndexName": index} if index else {"ConsistentRead": True}
        items = query_items(
            self._client,
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            Limit=limit,
            **where,
        )
        newest_first = [message_from_item(i) for i in islice(items, limit)]
        return newest_first[::-1]

    def of_conversation(self, user_id: str, refs: Sequence[tuple[str, str]]) -> list[Message]:
        wanted: dict[str, set[int]] = {}
        for channel_id, message_id in refs:
            wanted.setdefault(channel_id, set()).add(int(message_id))
        found = [
            m
            for channel_id, ids in wanted.items()
            for m in self._conversation_lines(channel_id, user_id, between=(min(ids), max(ids)))
            if int(m.message_id) in ids
        ]
        return sorted(found, key=lambda m: int(m.message_id))

    def _conversation_lines(
        self, channel_id: str, user_id: str, *, between: tuple[int, int] | None = None
    ) -> Iterator[Message]:
        """The lines of the person's own conversation with the bot in one channel (by_conversation),
        with message ids in ``between`` (inclusive) if given, in id order."""
        condition, values = "conversation = :key", {":key": s(conversation_key(channel_id, user_id))}
        if between is not None:
            condition += " AND message_id BETWEEN :low AND :high"
            values |= {":low": n(between[0]), ":high": n(between[1])}
        items = query_items(
            self._client,
            TableName=self._table,
            IndexName=BY_CONVERSATION,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ScanIndexForward=True,
        )
        # The index is shared by key only: check the owner again, so no other line slips in.
        return (m for m in map(message_from_item, items) if m.conversation_of == user_id)

    def between(self, start: datetime, end: datetime) -> list[Message]:
        low = _first_snowflake_at_or_after(start)
        high = _first_snowflake_at_or_after(end) - 1  # end is exclusive
        if high < low:
            return []
        found: list[Message] = []
        first_day = snowflake_time(low).astimezone(JST).date()
        last_day = snowflake_time(high).astimezone(JST).date()
        for day in _jst_days(first_day, last_day):
            items = query_items(
                self._client,
                TableName=self._table,
                IndexName=BY_JST_DAY,
                KeyConditionExpression="jst_day = :day AND message_id BETWEEN :low AND :high",
                ExpressionAttributeValues={":day": s(day), ":low": n(low), ":high": n(high)},
                ScanIndexForward=True,
            )
            found.extend(message_from_item(i) for i in items)
        return sorted(found, key=lambda m: int(m.message_id))
