"""The local store's reads (moto_store) answer every request as moto alone does: each request below
is sent twice over HTTP to the same data, once through this layer's own read path and once inside
``moto_answers`` (moto's copies, projection and serializer), and the two answers must be equal.
Sets are compared as sets (moto's own projection returns them in any order)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.core.responses import ActionResult
from moto.dynamodb.models.dynamo_type import Item

from memorybot.local import moto_store
from store_tables import create_indexed_table

_names = itertools.count(1)
BIG = "x" * 300_000  # four of these make more than one 1 MB page


def _item(pk: str, sk: str, **attrs: Any) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": sk}, **attrs}


def _rows() -> list[dict]:
    rows = []
    for i in range(12):
        attrs: dict[str, Any] = {"s": {"S": f"text {i} {'cello' if i % 3 == 0 else 'go'}"}, "g": {"S": f"g{i % 2}"}}
        if i % 2 == 0:
            attrs["n"] = {"N": ["1e2", "01.50", "-0", "7", "100", "3.25"][i // 2]}
            attrs["b"] = {"B": bytes(range(i, i + 9))}
        if i % 3 == 0:
            attrs["ss"] = {"SS": ["b", "a", f"c{i}"]}
            attrs["ns"] = {"NS": ["1", "2.50", f"{i}0"]}
            attrs["bs"] = {"BS": [b"\x00", bytes([i + 1])]}
        if i % 4 == 0:
            attrs["l"] = {"L": [{"S": "first"}, {"N": "1.0"}, {"M": {"k": {"N": "02"}}}, {"NULL": True}]}
            attrs["m"] = {"M": {"inner": {"S": "v"}, "num": {"N": "1e1"}, "flag": {"BOOL": i % 8 == 0}}}
            attrs["a.b"] = {"S": "a dotted name"}
        if i == 5:
            attrs["empty_l"] = {"L": []}
            attrs["empty_m"] = {"M": {}}
            attrs["t"] = {"BOOL": False}
        rows.append(_item("p", f"{i:02}", **attrs))
    rows += [_item("big", f"{i:02}", s={"S": BIG}, g={"S": "gbig"}) for i in range(5)]
    rows.append(_item("q", "only", s={"S": "another partition"}))
    return rows


@pytest.fixture(scope="module")
def tables(moto_server):
    """A (pk, sk) table with an index on ``g``, and a table of a hash key only; (client, names)."""
    client = moto_server.client()
    name, flat = f"reads{next(_names)}", f"reads-flat{next(_names)}"
    create_indexed_table(client, name)
    client.create_table(
        TableName=flat,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for row in _rows():
        client.put_item(TableName=name, Item=row)
    client.put_item(TableName=flat, Item={"id": {"S": "one"}, "ss": {"SS": ["z", "y"]}, "n": {"N": "1e3"}})
    return client, {"table": name, "flat": flat}


P = {":p": {"S": "p"}}
QUERIES: dict[str, dict[str, Any]] = {
    "partition": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": P},
    "backwards": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": P, "ScanIndexForward": False},
    "limit": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": P, "Limit": 4},
    "limit backwards": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": P,
        "Limit": 3,
        "ScanIndexForward": False,
    },
    "start key": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": P,
        "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "03"}},
    },
    "start key backwards": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": P,
        "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "08"}},
        "ScanIndexForward": False,
        "Limit": 2,
    },
    "start key between two": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": P,
        "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "04x"}},
    },
    "between": {
        "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
        "ExpressionAttributeValues": {**P, ":a": {"S": "03"}, ":b": {"S": "07"}},
    },
    "begins_with": {
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :a)",
        "ExpressionAttributeValues": {**P, ":a": {"S": "1"}},
    },
    "greater, backwards, limit": {
        "KeyConditionExpression": "pk = :p AND sk > :a",
        "ExpressionAttributeValues": {**P, ":a": {"S": "05"}},
        "ScanIndexForward": False,
        "Limit": 2,
    },
    "at most": {
        "KeyConditionExpression": "#k = :p AND #r <= :a",
        "ExpressionAttributeNames": {"#k": "pk", "#r": "sk"},
        "ExpressionAttributeValues": {**P, ":a": {"S": "02"}},
    },
    "equal": {
        "KeyConditionExpression": "pk = :p AND sk = :a",
        "ExpressionAttributeValues": {**P, ":a": {"S": "04"}},
    },
    "filter": {
        "KeyConditionExpression": "pk = :p",
        "FilterExpression": "attribute_exists(ss) OR contains(s, :x)",
        "ExpressionAttributeValues": {**P, ":x": {"S": "go"}},
    },
    "filter on numbers and sizes": {
        "KeyConditionExpression": "pk = :p",
        "FilterExpression": "n > :num AND NOT attribute_exists(l) OR size(s) > :k",
        "ExpressionAttributeValues": {**P, ":num": {"N": "2"}, ":k": {"N": "9"}},
    },
    "filter and limit (count and scanned count differ)": {
        "KeyConditionExpression": "pk = :p",
        "FilterExpression": "attribute_exists(n)",
        "ExpressionAttributeValues": P,
        "Limit": 5,
    },
    "projection": {
        "KeyConditionExpression": "pk = :p",
        "ProjectionExpression": "s, n, b, ss, ns, bs",
        "ExpressionAttributeValues": P,
    },
    "projection with names, lists and maps": {
        "KeyConditionExpression": "pk = :p",
        "ProjectionExpression": "#n, m, l, #d, empty_l, empty_m, t",
        "ExpressionAttributeNames": {"#n": "n", "#d": "a.b"},
        "ExpressionAttributeValues": P,
    },
    "projection of nothing stored": {
        "KeyConditionExpression": "pk = :p",
        "ProjectionExpression": "nothing, neither",
        "ExpressionAttributeValues": P,
    },
    "projection of paths (moto's own)": {
        "KeyConditionExpression": "pk = :p",
        "ProjectionExpression": "m.inner, l[2].k, s",
        "ExpressionAttributeValues": P,
    },
    "projection, filter and limit": {
        "KeyConditionExpression": "pk = :p",
        "ProjectionExpression": "sk, s",
        "FilterExpression": "attribute_exists(b)",
        "ExpressionAttributeValues": P,
        "Limit": 7,
    },
    "count": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": P, "Select": "COUNT"},
    "all attributes, consistent": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": P,
        "Select": "ALL_ATTRIBUTES",
        "ConsistentRead": True,
    },
    "nobody's partition": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "nobody"}}},
    "a 1 MB page": {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "big"}}},
    "a 1 MB page backwards, projected": {
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "big"}},
        "ScanIndexForward": False,
        "ProjectionExpression": "s, sk",
    },
    "an index": {
        "IndexName": "by_g",
        "KeyConditionExpression": "g = :g",
        "ExpressionAttributeValues": {":g": {"S": "g0"}},
        "ProjectionExpression": "s, b, m",
    },
    "an index backwards with a limit": {
        "IndexName": "by_g",
        "KeyConditionExpression": "g = :g AND sk > :a",
        "ExpressionAttributeValues": {":g": {"S": "g1"}, ":a": {"S": "02"}},
        "ScanIndexForward": False,
        "Limit": 2,
    },
    "key conditions, the old way": {
        "KeyConditions": {
            "pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]},
            "sk": {"ComparisonOperator": "GE", "AttributeValueList": [{"S": "06"}]},
        }
    },
    "a query filter, the old way": {
        "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}},
        "QueryFilter": {"g": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "g1"}]}},
    },
}
SCANS: dict[str, dict[str, Any]] = {
    "whole table": {},
    "limit": {"Limit": 5},
    "filter, projection": {
        "FilterExpression": "attribute_exists(ss)",
        "ProjectionExpression": "pk, sk, ss, n, l",
    },
    "start key": {"ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "05"}}, "Limit": 4},
}
GETS: dict[str, dict[str, Any]] = {
    "an item": {"Key": {"pk": {"S": "p"}, "sk": {"S": "00"}}},
    "consistent": {"Key": {"pk": {"S": "p"}, "sk": {"S": "04"}}, "ConsistentRead": True},
    "projected": {"Key": {"pk": {"S": "p"}, "sk": {"S": "00"}}, "ProjectionExpression": "n, ss, l, m, nothing"},
    "projected with a path": {"Key": {"pk": {"S": "p"}, "sk": {"S": "00"}}, "ProjectionExpression": "m.num, s"},
    "absent": {"Key": {"pk": {"S": "p"}, "sk": {"S": "99"}}},
    "absent, projected": {"Key": {"pk": {"S": "p"}, "sk": {"S": "99"}}, "ProjectionExpression": "s"},
}
FLAT_READS: dict[str, tuple[str, dict[str, Any]]] = {
    "get": ("get_item", {"Key": {"id": {"S": "one"}}, "ProjectionExpression": "ss, n"}),
    "query": ("query", {"KeyConditionExpression": "id = :i", "ExpressionAttributeValues": {":i": {"S": "one"}}}),
    "query, nobody": ("query", {"KeyConditionExpression": "id = :i", "ExpressionAttributeValues": {":i": {"S": "x"}}}),
}
REFUSED: dict[str, tuple[str, dict[str, Any]]] = {
    "a name never used": (
        "query",
        {
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": P,
            "ExpressionAttributeNames": {"#unused": "s"},
        },
    ),
    "a value missing": (
        "query",
        {"KeyConditionExpression": "pk = :p AND sk > :nothing", "ExpressionAttributeValues": P},
    ),
    "an index asked to read consistently": (
        "query",
        {
            "IndexName": "by_g",
            "KeyConditionExpression": "g = :g",
            "ExpressionAttributeValues": {":g": {"S": "g0"}},
            "ConsistentRead": True,
        },
    ),
    "a get without its sort key": ("get_item", {"Key": {"pk": {"S": "p"}}}),
}


def _normal(value: Any) -> Any:
    """An answer without its request id, every set in one order."""
    if isinstance(value, dict):
        return {
            k: sorted(v) if k in ("SS", "NS", "BS") else _normal(v) for k, v in value.items() if k != "ResponseMetadata"
        }
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _both(client, operation: str, request: dict[str, Any]) -> tuple[Any, Any]:
    """(this layer's answer, moto's own answer) to the same request on the same data."""
    ours = _normal(getattr(client, operation)(**request))
    with moto_store.moto_answers():
        theirs = _normal(getattr(client, operation)(**request))
    return ours, theirs


READS = [
    *(("query", "table", name, request) for name, request in QUERIES.items()),
    *(("scan", "table", name, request) for name, request in SCANS.items()),
    *(("get_item", "table", name, request) for name, request in GETS.items()),
    *((operation, "flat", name, request) for name, (operation, request) in FLAT_READS.items()),
]


@pytest.mark.parametrize(
    "operation, table, request_", [r[:2] + r[3:] for r in READS], ids=[f"{r[0]}: {r[2]}" for r in READS]
)
def test_a_read_is_answered_as_moto_answers_it(tables, operation, table, request_):
    client, names = tables
    ours, theirs = _both(client, operation, {"TableName": names[table], **request_})
    assert ours == theirs


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_read_is_refused_as_moto_refuses_it(tables, name):
    client, names = tables
    operation, request = REFUSED[name]
    errors = []
    for answer_as_moto in (False, True):
        with pytest.raises(ClientError) as refused:
            if answer_as_moto:
                with moto_store.moto_answers():
                    getattr(client, operation)(TableName=names["table"], **request)
            else:
                getattr(client, operation)(TableName=names["table"], **request)
        errors.append((refused.value.response["Error"], refused.value.response["ResponseMetadata"]["HTTPStatusCode"]))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("limit, forward", [(1, True), (3, True), (4, False), (None, True), (None, False)])
def test_paging_through_a_partition_gives_the_same_pages(tables, limit, forward):
    client, names = tables
    for partition in ("p", "big"):
        request: dict[str, Any] = {
            "TableName": names["table"],
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": partition}},
            "ScanIndexForward": forward,
            "ProjectionExpression": "sk, s, n",
            **({"Limit": limit} if limit else {}),
        }
        pages: list[list] = [[], []]
        for side, start in ((0, None), (1, None)):
            while True:
                asked = {**request, **({"ExclusiveStartKey": start} if start else {})}
                if side == 0:
                    page = client.query(**asked)
                else:
                    with moto_store.moto_answers():
                        page = client.query(**asked)
                pages[side].append(_normal(page))
                start = page.get("LastEvaluatedKey")
                if not start:
                    break
        assert pages[0] == pages[1]
        if limit or partition == "big":
            assert len(pages[0]) > 1  # more than one page: the start keys were followed


def test_a_partition_is_read_without_copying_its_items_or_moto_serializer(tables, monkeypatch):
    """What the layer is for: the same answer, without the per-item copies and the generic serializer."""
    client, names = tables
    copied: list[Item] = []
    serialized: list[object] = []
    real_copy, real_serialize = Item.__deepcopy__, ActionResult.execute_result

    def deepcopy(self, memo):
        copied.append(self)
        return real_copy(self, memo)

    def execute_result(self, context):
        serialized.append(context.operation_model.name)
        return real_serialize(self, context)

    monkeypatch.setattr(Item, "__deepcopy__", deepcopy)
    monkeypatch.setattr(ActionResult, "execute_result", execute_result)
    answer = client.query(TableName=names["table"], **QUERIES["projection with names, lists and maps"])
    assert answer["Count"] == 12
    assert client.get_item(TableName=names["table"], **GETS["projected"])["Item"]["n"] == {"N": "1E+2"}
    assert copied == []
    assert serialized == []
    with moto_store.moto_answers():
        client.query(TableName=names["table"], **QUERIES["projection"])
    assert copied and serialized == ["Query"]  # the reference path is moto's own
