"""The shared DynamoDB helpers against moto's server: typed values in and out, paging, a
conditional write's failed condition as an answer, and the read-back after a lost answer."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

import pytest
from botocore.exceptions import ClientError

from faults import InjectedFault, LostAnswers, RequestFaults
from memorybot import tables
from memorybot.adapters.attempts import DynamoAttemptCounter
from memorybot.adapters.dynamodb_items import (
    REASON_CONDITION_FAILED,
    bool_of,
    cancellation_code,
    conditional_write,
    error_code,
    flag,
    get_item,
    int_of,
    n,
    number_str,
    optional_str,
    optional_time,
    query_items,
    s,
    s_list,
    str_list_of,
    str_of,
    transact_or_find_committed,
)
from memorybot.core.record.domain import iso

SNOWFLAKE = "1312345678901234567890"  # more digits than a float carries exactly
AT = datetime(2026, 11, 20, 15, 0, 0, 123456, tzinfo=UTC)


def _message(channel: str, message_id: int | str, **extra) -> dict:
    return {"channel_id": s(channel), "message_id": n(message_id), **extra}


def _counted(client) -> list[str]:
    """The names of the requests the client makes from now on."""
    seen: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: seen.append(model.name))
    return seen


def test_values_written_and_read_back_through_the_table_come_back_the_same(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    item = _message(
        "c1",
        SNOWFLAKE,
        content=s("héllo"),
        is_bot=flag(True),
        sources=s_list(["b", "a", "b"]),
        at=s(iso(AT)),
    )
    client.put_item(TableName=table, Item=item)

    stored = get_item(client, table, _message("c1", SNOWFLAKE))
    assert stored is not None
    assert number_str(stored["message_id"]) == SNOWFLAKE and int_of(stored["message_id"]) == int(SNOWFLAKE)
    assert str_of(stored, "content") == "héllo" and optional_str(stored, "content") == "héllo"
    assert bool_of(stored, "is_bot") is True
    assert str_list_of(stored, "sources") == ("b", "a", "b")  # a List keeps order and duplicates
    assert optional_time(stored, "at") == AT


def test_absent_attributes_read_as_their_defaults():
    item = {"channel_id": s("c1")}
    assert str_of(item, "content") == "" and str_of(item, "summary", "{}") == "{}"
    assert optional_str(item, "content") is None
    assert bool_of(item, "is_bot") is False
    assert str_list_of(item, "sources") == ()
    assert optional_time(item, "at") is None


def test_get_item_of_a_missing_key_is_none(dynamo):
    client, settings = dynamo
    assert get_item(client, settings.table(tables.MESSAGES), _message("c1", 1)) is None


def test_query_items_follows_every_page_and_reads_no_further_than_asked(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    for message_id in range(1, 6):
        client.put_item(TableName=table, Item=_message("c1", message_id))
    client.put_item(TableName=table, Item=_message("c2", 9))  # another partition: never read
    request = {
        "TableName": table,
        "KeyConditionExpression": "channel_id = :c",
        "ExpressionAttributeValues": {":c": s("c1")},
        "Limit": 2,
    }
    seen = _counted(client)

    assert [int_of(i["message_id"]) for i in query_items(client, **request)] == [1, 2, 3, 4, 5]
    assert seen.count("Query") == 3  # 2 + 2 + 1

    seen.clear()
    assert len(list(islice(query_items(client, **request), 2))) == 2
    assert seen.count("Query") == 1  # the first page held them: no second request


def test_a_conditional_write_whose_condition_fails_answers_false_and_other_errors_raise(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    put = {"Item": _message("c1", 1), "ConditionExpression": "attribute_not_exists(message_id)"}

    assert conditional_write(client.put_item, TableName=table, **put) is True
    assert conditional_write(client.put_item, TableName=table, **put) is False
    with pytest.raises(ClientError) as raised:
        conditional_write(client.put_item, TableName=f"{table}-missing", **put)
    assert error_code(raised.value) == "ResourceNotFoundException"


def _transaction(table: str, message_id: int) -> list[dict]:
    return [
        {
            "Put": {
                "TableName": table,
                "Item": _message("c1", message_id),
                "ConditionExpression": "attribute_not_exists(message_id)",
            }
        }
    ]


def test_a_transaction_whose_answer_is_lost_is_found_committed(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    lost = LostAnswers(client)
    lost.reset({1})  # the transaction commits, then its answer is lost
    checks: list[bool] = []

    def committed() -> bool:
        checks.append(get_item(client, table, _message("c1", 1)) is not None)
        return checks[-1]

    transact_or_find_committed(client, _transaction(table, 1), refused=lambda e: False, committed=committed)
    assert checks == [True]
    assert lost.operations == ["TransactWriteItems", "GetItem"]


def test_a_transaction_that_failed_before_it_was_sent_raises_after_the_read_back(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    faults = RequestFaults(client)
    faults.reset({1})

    with pytest.raises(InjectedFault):
        transact_or_find_committed(
            client,
            _transaction(table, 1),
            refused=lambda e: False,
            committed=lambda: get_item(client, table, _message("c1", 1)) is not None,
        )
    assert faults.operations == ["TransactWriteItems", "GetItem"]


def test_a_refused_transaction_is_raised_as_it_came_without_a_read_back(dynamo):
    client, settings = dynamo
    table = settings.table(tables.MESSAGES)
    client.put_item(TableName=table, Item=_message("c1", 1))
    seen = _counted(client)

    def refused(error: ClientError) -> bool:
        return cancellation_code(error, 0) == REASON_CONDITION_FAILED

    def committed() -> bool:
        raise AssertionError("a refusal needs no read-back")

    with pytest.raises(ClientError) as raised:
        transact_or_find_committed(client, _transaction(table, 1), refused=refused, committed=committed)
    assert error_code(raised.value) == "TransactionCanceledException"
    assert cancellation_code(raised.value, 0) == REASON_CONDITION_FAILED
    assert cancellation_code(raised.value, 1) is None  # no such item in the transaction
    assert seen == ["TransactWriteItems"]


def test_cancellation_code_is_none_for_any_other_error():
    error = ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "PutItem")
    assert cancellation_code(error, 0) is None


def test_the_attempt_counter_counts_each_job_apart(dynamo):
    client, settings = dynamo
    counter = DynamoAttemptCounter(client, settings.table(tables.DEDUP), clock=lambda: 1_000)
    assert [counter.count("reply", "j1"), counter.count("reply", "j1"), counter.count("reply", "j2")] == [1, 2, 1]
    item = get_item(
        client, settings.table(tables.DEDUP), {tables.DEDUP.partition.name: s("memorybot.unavailable.reply#j1")}
    )
    assert item is not None
    assert int_of(item[tables.DEDUP.ttl_attribute]) == 1_000 + tables.DEDUP_TTL_SECONDS
