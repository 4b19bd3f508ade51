"""The local DynamoDB store (moto behind moto_store's layer), over HTTP like every adapter talks to it:
a refused transaction changes nothing and undoes nothing of anyone else's, requests do not race
inside the store, a transaction copies only the items it names, a query answers as before."""

from __future__ import annotations

import copy
import gc
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

from memorybot.local import moto_dynamo
from store_tables import create_indexed_table

_names = itertools.count(1)


@pytest.fixture
def table(moto_server):
    """A fresh table (pk, sk) with a global index on ``g``; (client, name)."""
    client = moto_server.client()
    name = f"store{next(_names)}"
    create_indexed_table(client, name)
    return client, name


def key(pk: str, sk: str) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def put(table: str, pk: str, sk: str, **attrs: str) -> dict:
    return {"Put": {"TableName": table, "Item": {**key(pk, sk), **{k: {"S": v} for k, v in attrs.items()}}}}


def update(table: str, item_key: dict, expression: str, values: dict) -> dict:
    return {
        "Update": {
            "TableName": table,
            "Key": item_key,
            "UpdateExpression": expression,
            "ExpressionAttributeValues": values,
        }
    }


def absent(table: str, pk: str, sk: str) -> dict:
    """A check that fails when the item exists: the refusal the tests provoke."""
    return {
        "ConditionCheck": {"TableName": table, "Key": key(pk, sk), "ConditionExpression": "attribute_not_exists(pk)"}
    }


def backend():
    return dynamodb_backends["123456789012"][moto_dynamo.LOCAL_REGION]


def items(client, name: str) -> dict[tuple[str, str], dict]:
    found = client.scan(TableName=name, ConsistentRead=True)["Items"]
    return {(i["pk"]["S"], i["sk"]["S"]): i for i in found}


def test_a_refused_transaction_changes_none_of_its_items_and_says_which_check_failed(table):
    client, name = table
    client.put_item(TableName=name, Item={**key("a", "1"), "v": {"S": "before"}})
    client.put_item(TableName=name, Item={**key("a", "taken"), "v": {"S": "there"}})
    client.put_item(TableName=name, Item=key("a", "exists"))
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(
            TransactItems=[
                put(name, "a", "new", v="added"),
                update(name, key("a", "1"), "SET v = :v", {":v": {"S": "after"}}),
                {"Delete": {"TableName": name, "Key": key("a", "taken")}},
                absent(name, "a", "exists"),
            ]
        )
    assert refused.value.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r["Code"] for r in refused.value.response["CancellationReasons"]]
    assert reasons == ["None", "None", "None", "ConditionalCheckFailed"]
    assert items(client, name) == {
        ("a", "1"): {**key("a", "1"), "v": {"S": "before"}},
        ("a", "taken"): {**key("a", "taken"), "v": {"S": "there"}},
        ("a", "exists"): key("a", "exists"),
    }


def test_a_write_that_fails_inside_a_transaction_undoes_the_writes_before_it(table):
    client, name = table
    client.put_item(TableName=name, Item={**key("b", "1"), "n": {"S": "not a number"}})
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(
            TransactItems=[
                put(name, "b", "2", v="added"),
                update(name, key("b", "1"), "ADD n :one", {":one": {"N": "1"}}),  # to a string: the write fails
            ]
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert set(items(client, name)) == {("b", "1")}
    assert items(client, name)[("b", "1")]["n"] == {"S": "not a number"}


def test_a_transaction_naming_one_item_twice_is_a_validation_error_and_writes_nothing(table):
    client, name = table
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(TransactItems=[put(name, "c", "1"), put(name, "c", "2"), put(name, "c", "1")])
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert items(client, name) == {}


def test_a_refused_transaction_leaves_a_write_another_request_committed_while_it_ran(table, monkeypatch):
    """The other request arrives while the transaction is between its writes. moto alone let it in and
    then put back the table as it was when the transaction began, erasing that request's write."""
    client, name = table
    other = moto_dynamo.MotoDynamo(client.meta.endpoint_url).client()
    landed = threading.Event()
    writer: list[threading.Thread] = []
    real_put = type(backend()).put_item

    def put_item(self, table_name, item_attrs, *args, **kwargs):
        result = real_put(self, table_name, item_attrs, *args, **kwargs)
        if table_name == name and item_attrs["sk"]["S"] == "mine" and not writer:
            # Another request, on its own connection, writes another item of the same table now.
            thread = threading.Thread(
                target=lambda: (other.put_item(TableName=name, Item=key("d", "theirs")), landed.set())
            )
            writer.append(thread)
            thread.start()
            landed.wait(timeout=0.5)  # serialised: it cannot land before this transaction has answered
        return result

    monkeypatch.setattr(type(backend()), "put_item", put_item)
    client.put_item(TableName=name, Item=key("d", "taken"))
    with pytest.raises(ClientError):
        client.transact_write_items(TransactItems=[put(name, "d", "mine"), absent(name, "d", "taken")])
    writer[0].join(timeout=10)
    assert landed.is_set()
    assert set(items(client, name)) == {("d", "taken"), ("d", "theirs")}


def test_refused_transactions_on_many_threads_lose_no_committed_write_and_raise_nothing(table):
    """Real concurrency: writers commit while other threads' transactions are refused on the same
    table, both over HTTP. Every committed write is there at the end; no request failed but the
    refusals (moto alone: lost writes and "dictionary changed size during iteration")."""
    client, name = table
    client.put_item(TableName=name, Item=key("e", "taken"))
    for start in range(0, 300, 25):  # a table of some size: moto alone copied it for every transaction
        filler = [{"PutRequest": {"Item": key("filler", f"{i:03}")}} for i in range(start, start + 25)]
        client.batch_write_item(RequestItems={name: filler})
    endpoint = client.meta.endpoint_url
    unexpected: list[str] = []

    def writer(n: int) -> None:
        own = moto_dynamo.MotoDynamo(endpoint).client()
        for i in range(15):
            own.put_item(TableName=name, Item={**key("e", f"w{n}-{i}"), "g": {"S": "kept"}})

    def refused(n: int) -> None:
        own = moto_dynamo.MotoDynamo(endpoint).client()
        for i in range(15):
            try:
                own.transact_write_items(TransactItems=[put(name, "e", f"r{n}-{i}"), absent(name, "e", "taken")])
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    unexpected.append(exc.response["Error"]["Code"])
            else:
                unexpected.append("committed")

    with ThreadPoolExecutor(max_workers=6) as pool:
        done = [pool.submit(writer, n) for n in range(3)] + [pool.submit(refused, n) for n in range(3)]
        for future in done:
            future.result()
    assert unexpected == []
    written = {k for k in items(client, name) if k[0] == "e"}
    assert written == {("e", "taken")} | {("e", f"w{n}-{i}") for n in range(3) for i in range(15)}


def test_a_transaction_copies_only_the_items_it_names_never_a_table(table, monkeypatch):
    client, name = table
    for i in range(50):
        client.put_item(TableName=name, Item=key("f", f"{i:03}"))
    live = backend().get_table(name)
    copied: list[type] = []
    real = copy.deepcopy

    def deepcopy(value, memo=None):
        if not memo:  # the outermost call: what was asked to be copied
            copied.append(type(value))
        return real(value, memo)

    monkeypatch.setattr(copy, "deepcopy", deepcopy)
    client.transact_write_items(TransactItems=[put(name, "f", "new")])
    with pytest.raises(ClientError):
        client.transact_write_items(TransactItems=[put(name, "f", "other"), absent(name, "f", "000")])
    assert Table not in copied
    assert backend().get_table(name) is live  # moto swapped a copy taken at the start back in
    assert len(items(client, name)) == 51


def test_queries_answer_a_partition_and_an_index_in_order_page_by_page(table):
    client, name = table
    for pk in ("p", "q"):
        for i in range(7):
            client.put_item(TableName=name, Item={**key(pk, f"{i:02}"), "g": {"S": f"g-{i % 2}"}})
    client.put_item(TableName=name, Item=key("p", "99"))  # no g: not in the index

    def pages(**query) -> list[tuple[str, str]]:
        seen, start = [], {}
        while True:
            page = client.query(TableName=name, Limit=3, **query, **start)
            seen += [(i["pk"]["S"], i["sk"]["S"]) for i in page["Items"]]
            if "LastEvaluatedKey" not in page:
                return seen
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}

    partition = pages(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}})
    assert partition == [("p", f"{i:02}") for i in range(7)] + [("p", "99")]
    backwards = pages(
        KeyConditionExpression="pk = :p AND sk < :s",
        ExpressionAttributeValues={":p": {"S": "q"}, ":s": {"S": "05"}},
        ScanIndexForward=False,
    )
    assert backwards == [("q", f"{i:02}") for i in (4, 3, 2, 1, 0)]
    index = pages(IndexName="by_g", KeyConditionExpression="g = :g", ExpressionAttributeValues={":g": {"S": "g-1"}})
    assert sorted(index) == sorted((pk, f"{i:02}") for pk in ("p", "q") for i in (1, 3, 5))
    assert [sk for _, sk in index] == sorted(sk for _, sk in index)  # the index's sort key orders it
    nobody = pages(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "nobody"}})
    assert nobody == []


def test_reads_and_writes_leave_no_item_behind_them(table):
    """moto kept every item it made (each stored, read, copied or projected one) in a list for its
    dashboard: the stack grew with every request. Only the stored items are left."""
    client, name = table
    for i in range(20):
        client.put_item(TableName=name, Item={**key("h", f"{i:02}"), "v": {"S": "x"}, "g": {"S": "i"}})

    def live_items() -> int:
        gc.collect()
        return sum(isinstance(o, Item) for o in gc.get_objects())

    before = live_items()
    for _ in range(10):
        client.query(
            TableName=name,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "h"}},
            ProjectionExpression="v",
        )
        client.query(
            TableName=name,
            IndexName="by_g",
            KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": {"S": "i"}},
        )
        client.scan(TableName=name, Limit=5)
        client.get_item(TableName=name, Key=key("h", "01"), ProjectionExpression="v")
        client.update_item(
            TableName=name,
            Key=key("h", "02"),
            UpdateExpression="SET v = :v",
            ExpressionAttributeValues={":v": {"S": "y"}},
        )
        with pytest.raises(ClientError):
            client.transact_write_items(TransactItems=[put(name, "h", "new"), absent(name, "h", "00")])
    assert live_items() <= before
    assert len(Item.instances_tracked) == 0


def test_a_condition_parsed_once_is_still_checked_against_each_item_and_each_request_values(table):
    """The layer keeps moto's parse of a condition for the same expression, names and values: the
    kept tree must judge every item afresh, and other values must make another condition."""
    client, name = table
    guarded = {"ConditionExpression": "attribute_not_exists(pk) OR v = :v"}
    outcomes = []
    for i, (stored, asked) in enumerate([(None, "a"), ("a", "a"), ("b", "a"), ("b", "b"), (None, "b")]):
        item_key = key("j", f"{i}")
        if stored is not None:
            client.put_item(TableName=name, Item={**item_key, "v": {"S": stored}})
        try:
            client.put_item(
                TableName=name,
                Item={**item_key, "v": {"S": "new"}},
                ExpressionAttributeValues={":v": {"S": asked}},
                **guarded,
            )
            outcomes.append("written")
        except ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])
    assert outcomes == ["written", "written", "ConditionalCheckFailedException", "written", "written"]
    for _ in range(2):  # the handler's check of the names used, on a parse it made and on a remembered one
        with pytest.raises(ClientError) as unused:
            client.put_item(
                TableName=name,
                Item=key("j", "x"),
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeNames={"#never": "v"},
            )
        assert unused.value.response["Error"]["Code"] == "ValidationException"
