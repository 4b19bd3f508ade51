"""Our layer over moto's DynamoDB backend: transactions atomic and isolated as DynamoDB's are.

moto (5.2) answers requests on as many threads as arrive, with nothing between them, and its
TransactWriteItems deep-copies every table a transaction names before applying it, restoring those
copies when the transaction is refused. So a transaction costs the size of its tables, a refused
one puts back the tables as they were when it began (undoing every write other requests committed
meanwhile, an erasure's deletes among them), and a transaction iterating a table while another
thread writes it fails with "dictionary changed size during iteration". Its queries sort every item
of the table before picking the partition asked for, so a turn grows slower as the tables fill.

Here, installed once per process by ``install()``:

- one request at a time: every DynamoDB action runs under one process-wide lock, so requests never
  race inside the store (DynamoDB serialises conflicting writes per item; one at a time is a
  stricter model of it that no test can tell apart from the real thing);
- a transaction journals only the items it names (their state before its write) and on refusal
  puts back exactly those, so its cost is that of its items and a refusal touches nothing else;
- a query reads only its partition (or, on an index, the items whose index key matches) before
  moto sorts and pages them, instead of sorting the whole table first;
- reads answer without moto's copies: a query of a table's partition pages, filters and projects
  the stored items themselves (moto deep-copied every item it returned, and projected each one by
  turning the whole item into plain values once per attribute named), and a query's, scan's or
  get's answer is written as JSON straight from the items (moto's generic response serializer
  walked the model's shapes value by value). Under the lock nothing changes an item while its
  answer is written, so sharing it is safe; the answers are moto's own, which
  tests/integration/test_local_store_reads.py checks request by request (``moto_answers``);
- an item is not kept once nothing uses it: moto keeps every instance of its models in a list
  for its dashboard, and an item is created for every one stored, read, copied and projected, so
  each request left its copies behind for good (about 17 MB a day of the week benchmark);
- a condition is parsed once: moto parsed a write's condition two or three times a request (half
  the store's time on an import), into a tree that evaluating never changes;
- the server finds a request's service once per host name: moto's looked for it on every request,
  listing its own package's folders from disk and matching every service's URL patterns, under a
  lock all requests wait on.

The deployed bot never runs this: it is for the local stack, its tests and its benchmarks. It is
written against moto's internals, so pyproject pins moto's minor version, and ``install`` refuses
a moto whose internals are not the ones it knows.
"""

from __future__ import annotations

import base64
import copy
import functools
import inspect
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

SUPPORTED_MOTO = "5.2."
_installed = False
_install_lock = threading.Lock()
# Reentrant: a moto action that calls another backend method in the same thread (Step Functions'
# service integrations under mock_aws) must not wait for itself.
REQUEST_LOCK = threading.RLock()


def install() -> None:
    """Patch moto's DynamoDB backend in this process (idempotent)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        import moto
        from moto.dynamodb.models import DynamoDBBackend
        from moto.dynamodb.models.dynamo_type import Item
        from moto.dynamodb.models.table import Table
        from moto.dynamodb.responses import DynamoHandler
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        if not moto.__version__.startswith(SUPPORTED_MOTO):
            raise RuntimeError(
                f"memorybot's local DynamoDB layer is written for moto {SUPPORTED_MOTO}x, not {moto.__version__}: "
                "reinstall with `make clean install`"
            )
        _serialise(DynamoHandler)
        DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
        _narrow_queries(Table)
        _plain_answers()
        _untracked(Item)
        _remember_conditions()
        _remember_services(DomainDispatcherApplication)
        _installed = True


def _serialise(handler: Any) -> None:
    unlocked: Callable[[Any], Any] = handler.call_action

    def call_action(self: Any) -> Any:
        with REQUEST_LOCK:
            return unlocked(self)

    handler.call_action = call_action


def _untracked(model: Any) -> None:
    """Instances of ``model`` made without moto's BaseModel.__new__, which appends each to a list
    on the class that is never emptied (moto's reset makes a new list, and the appends go on)."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(cls)

    model.__new__ = __new__
    model.instances_tracked = []  # the ones made before: free once the tables drop them


CONDITIONS_REMEMBERED = 512  # distinct (expression, names, values): the constant ones stay


class _ParsedCondition:
    """What moto's ConditionExpressionParser gives its callers (``parse()`` and the names and
    values it found), from a parse made once for the same expression, names and values."""

    def __init__(self, asked: str, parsed: Callable[[str], tuple[Any, tuple[str, ...], tuple[str, ...]]]) -> None:
        self._asked, self._parsed = asked, parsed
        self.expr_attr_names_found: list[str] = []
        self.expr_attr_values_found: list[str] = []

    def parse(self) -> Any:
        op, names, values = self._parsed(self._asked)
        # Fresh lists: moto's callers extend them.
        self.expr_attr_names_found, self.expr_attr_values_found = list(names), list(values)
        return op


def _remember_conditions() -> None:
    """moto's condition parser, each parse kept for the same expression, names and values (the
    handlers' checks and the writes' conditions alike)."""
    from moto.dynamodb import comparisons, responses

    parser = comparisons.ConditionExpressionParser

    @functools.lru_cache(maxsize=CONDITIONS_REMEMBERED)
    def parsed(asked: str) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
        once = parser(*json.loads(asked))
        op = once.parse()
        return op, tuple(once.expr_attr_names_found), tuple(once.expr_attr_values_found)

    def create_condition_expression_parser(expr: str | None, names: Any, values: Any) -> Any:
        try:
            asked = json.dumps([expr, names, values], sort_keys=True)
        except TypeError:  # a value JSON does not carry (none of a request's): parsed as it is
            return parser(expr, names, values)
        return _ParsedCondition(asked, parsed)

    for module in (comparisons, responses):
        module.create_condition_expression_parser = create_condition_expression_parser  # type: ignore[attr-defined]


def _remember_services(application: Any) -> None:
    """The service a host name names, found once: the answer depends on the name alone (moto's
    folders and URL patterns do not change while it runs)."""
    find: Callable[[Any, str | None], Any] = application.get_backend_for_host
    found: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        if host not in found:
            found[host] = find(self, host)
        return found[host]

    application.get_backend_for_host = get_backend_for_host


@dataclass
class _Journal:
    """The items a transaction wrote, as they were before it: what a refusal puts back."""

    before: list[tuple[Any, Any, Any, Any, int | None]] = field(default_factory=list)

    def remember(self, table: Any, hash_key: Any, range_key: Any) -> None:
        bucket = table.items.get(hash_key)
        if table.range_key_attr is None:
            current = bucket
        else:
            current = bucket.get(range_key) if bucket else None
        stream = len(table.stream_shard.items) if table.stream_shard is not None else None
        self.before.append((table, hash_key, range_key, copy.deepcopy(current), stream))

    def undo(self) -> None:
        for table, hash_key, range_key, item, stream in reversed(self.before):
            if table.range_key_attr is None:
                if item is None:
                    table.items.pop(hash_key, None)
                else:
                    table.items[hash_key] = item
            else:
                bucket = table.items.get(hash_key)
                if item is not None:
                    table.items[hash_key][range_key] = item
                elif bucket is not None:
                    bucket.pop(range_key, None)
                    if not bucket:
                        del table.items[hash_key]
            if stream is not None:
                del table.stream_shard.items[stream:]  # the refused writes' stream records
        self.before.clear()


# One operation's cancellation reason as moto reports it: (code, message, the item as it was).
_Reason = tuple[str | None, str | None, dict[str, Any] | None]


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto's TransactWriteItems (same checks, same errors, same cancellation reasons), with the
    whole-table copies replaced by a journal of the items written."""
    from moto.dynamodb.exceptions import (  # moto's own errors, for the same answers
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    journal = _Journal()
    named: set[tuple[str, str]] = set()
    errors: list[_Reason] = []
    for item in transact_items:
        if len(item) > 1:
            journal.undo()
            raise TransactWriteSingleOpException
        try:
            errors.append(_write_one(self, item, journal, named))
        except (MultipleTransactionsException, MockValidationException):
            journal.undo()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), None))
        except Exception as e:  # noqa: BLE001 - moto's own: any other failure is that item's reason
            errors.append((type(e).__name__, str(e), None))

    if any(code is not None for code, _, _ in errors):
        journal.undo()
        raise TransactionCanceledException(errors)


def _write_one(self: Any, item: dict[str, Any], journal: _Journal, named: set[tuple[str, str]]) -> _Reason:
    """One operation of a transaction: its condition checked on the item as it is (a failed one is
    its cancellation reason, with the item as it was when ALL_OLD is asked), its write journalled,
    then applied through moto's own single-item call."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import ConditionalCheckFailed, MultipleTransactionsException

    done: _Reason = (None, None, None)

    op_type, op = next(iter(item.items()))
    if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
        raise ValueError("Unsupported transaction operation")
    table_name = op["TableName"]
    condition_expression = op.get("ConditionExpression")
    names = op.get("ExpressionAttributeNames")
    values = op.get("ExpressionAttributeValues")
    table = self.get_table(table_name)
    if op_type == "Put":
        attrs = op["Item"]
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = attrs[table.range_key_attr]
    else:
        key = op["Key"]
    unique = (str(table_name), str(dict(sorted(key.items()))))
    if unique in named:
        raise MultipleTransactionsException()
    named.add(unique)

    current = self.get_item(table_name, key)
    if condition_expression is not None:
        condition = get_filter_expression(condition_expression, names, values)
        if not condition.expr(current):
            original = None
            if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                original = current.to_json()["Attributes"]
            return ("ConditionalCheckFailed", str(ConditionalCheckFailed(item=original).message), original)
    if op_type == "ConditionCheck":
        return done
    journal.remember(table, *self.get_keys_value(table, key))
    conditions = {
        "condition_expression": condition_expression,
        "expression_attribute_names": names,
        "expression_attribute_values": values,
    }
    if op_type == "Put":
        self.put_item(table_name, op["Item"], **conditions)
    elif op_type == "Delete":
        self.delete_item(table_name, key, **conditions)
    else:
        self.update_item(table_name, key, update_expression=op["UpdateExpression"], **conditions)
    return done


# Off only inside ``moto_answers``: every read answered by moto's own code (the reference the
# differential tests compare this layer's answers with).
_own_reads = True


@contextmanager
def moto_answers() -> Iterator[None]:
    """Within: reads take moto's own path (its copies, its projection, its serializer), for a test
    to compare this layer's answers with moto's on the same requests."""
    global _own_reads
    with REQUEST_LOCK:  # between requests, never during one
        _own_reads = False
    try:
        yield
    finally:
        with REQUEST_LOCK:
            _own_reads = True


def _narrow_queries(table_class: Any) -> None:
    """Hand moto's Table.query only the items that can match; a table's own partition is paged,
    filtered and projected here, without moto's copy of every item."""
    unnarrowed = table_class.query
    signature = inspect.signature(unnarrowed)
    item_class = _moto_item_class()
    moto_project = item_class.project

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked = signature.bind(self, *args, **kwargs).arguments
        candidates = _candidates(self, asked.get("index_name"), asked.get("hash_key"), asked.get("hash_key_conditions"))
        if candidates is None:
            return unnarrowed(self, *args, **kwargs)
        if _own_reads and not asked.get("index_name") and not asked.get("filter_kwargs"):
            return _query_partition(self, candidates, asked)
        # Safe under REQUEST_LOCK: no other request sees this table while it answers.
        self.all_items = lambda: candidates
        try:
            return unnarrowed(self, *args, **kwargs)
        finally:
            del self.all_items

    def project(self: Any, projection_expressions: list[list[str]]) -> Any:
        if _own_reads and all(_top_level(path) for path in projection_expressions):
            return _project(self, [path[0] for path in projection_expressions])
        return moto_project(self, projection_expressions)

    table_class.query = query
    item_class.project = project


def _moto_item_class() -> Any:
    from moto.dynamodb.models.dynamo_type import Item

    return Item


def _top_level(path: list[str]) -> bool:
    """An attribute of the item itself, not a path into one (a map's key, a list's element)."""
    return len(path) == 1 and "." not in path[0] and "[" not in path[0]


# moto's projection turns each value into a plain one and back: a number comes back in its canonical
# form (1e2 as 1E+2), a set in any order, a nested value rebuilt. Values of these types come back
# as they are and are shared; the others take moto's own round trip, one attribute at a time.
_AS_STORED = frozenset({"S", "B", "BOOL", "NULL", "SS", "BS"})


def _project(item: Any, names: list[str]) -> Any:
    """moto's Item.project for top-level names: the item's own values, not copies of the item."""
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict, deserializer, serializer

    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(attrs)
    for name in names:
        value = item.attrs.get(name)
        if value is None:
            continue
        if value.type not in _AS_STORED:
            value = DynamoType(serializer.serialize(deserializer.deserialize(value.to_regular_json())))
        dict.__setitem__(attrs, name, value)  # within the item's size: the stored item passed the check
    projected: Any = Item.__new__(Item)
    projected.hash_key, projected.range_key, projected.attrs = item.hash_key, item.range_key, attrs
    return projected


def _query_partition(table: Any, candidates: list[Any], asked: dict[str, Any]) -> tuple[list[Any], int, Any]:
    """moto's Table.query on the table's own partition (the same order, start key, Limit, 1 MB page,
    key condition, filter, projection and LastEvaluatedKey) over the stored items, uncopied."""
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT

    forward = asked.get("scan_index_forward", True)
    ordered = sorted(candidates, key=lambda item: item.range_key)
    if forward is False:
        ordered.reverse()
    start = asked.get("exclusive_start_key")
    if start is not None:
        keys = ([table.hash_key_attr], [table.range_key_attr])
        ordered = list(_after(ordered, lambda item: table._item_comes_before_dct(item, start, *keys, forward)))
    matches = _range_matches(asked)
    limit = asked.get("limit")
    results: list[Any] = []
    size = 0
    last_key = None
    for item in ordered:
        item_size = item.size()
        if len(results) == limit or size + item_size > RESULT_SIZE_LIMIT:
            last_key = table._get_last_evaluated_key(results[-1], None)
            break
        if matches(item):
            results.append(item)
            size += item_size
    scanned = len(results)
    condition = asked.get("filter_expression")
    if condition is not None:
        results = [item for item in results if condition.expr(item)]
    projection = asked.get("projection_expressions")
    if projection:
        results = [item.project(projection) for item in results]
    return results, scanned, last_key


def _after(items: list[Any], before: Callable[[Any], bool]) -> Iterator[Any]:
    """The items from the first one that does not come before (or at) the start key."""
    started = False
    for item in items:
        started = started or not before(item)
        if started:
            yield item


def _range_matches(asked: dict[str, Any]) -> Callable[[Any], bool]:
    """The sort key's condition as moto applies it to a table's partition (all match without one)."""
    comparison = asked.get("range_comparison")
    if not comparison:
        return lambda item: True
    values = asked.get("range_objs")
    conditions = asked.get("range_key_conditions")
    name = conditions[-1][0] if conditions else None

    def matches(item: Any) -> bool:
        if name and item.attrs.get(name):
            return bool(item.attrs[name].compare(comparison, values))
        return bool(item.range_key.compare(comparison, values))

    return matches


# The answers written as JSON here, with the keys each may have; any other key (ConsumedCapacity,
# whose numbers the serializer formats) leaves the answer to moto's serializer.
_PLAIN_ANSWERS = {
    "Query": frozenset({"Items", "Count", "ScannedCount", "LastEvaluatedKey"}),
    "Scan": frozenset({"Items", "Count", "ScannedCount", "LastEvaluatedKey"}),
    "GetItem": frozenset({"Item"}),
}


class _NotPlain(Exception):
    """A value the JSON writer does not know: moto's serializer answers instead."""


def _plain_answers() -> None:
    """moto's DynamoResult, with the answers of _PLAIN_ANSWERS written straight to JSON."""
    from moto.core.responses import ActionResult
    from moto.dynamodb import responses
    from moto.dynamodb.models.utilities import dynamo_to_dict

    class PlainAnswer(responses.DynamoResult):
        def __init__(self, result: object) -> None:
            ActionResult.__init__(self, result)  # converted when it is written, not before

        def execute_result(self, context: Any) -> Any:
            keys = _PLAIN_ANSWERS.get(context.operation_model.name)
            if _own_reads and keys is not None and isinstance(self.result, dict) and set(self.result) <= keys:
                try:
                    body = json.dumps(_wire(self.result))
                except _NotPlain:
                    pass
                else:
                    version = context.service_model.metadata.get("jsonVersion", "1.0")
                    return 200, {"Content-Type": f"application/x-amz-json-{version}"}, body
            return ActionResult(dynamo_to_dict(self.result)).execute_result(context)

    responses.DynamoResult = PlainAnswer  # type: ignore[misc]


def _wire(value: Any) -> Any:
    """An answer's value as DynamoDB's JSON carries it (binary as base64)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if isinstance(value, DynamoType):
        return {value.type: _wire_value(value.type, value.value)}
    if isinstance(value, dict):
        return {key: _wire(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    if value is None or isinstance(value, str | int):  # bool is an int
        return value
    raise _NotPlain(type(value).__name__)


def _wire_value(kind: str, value: Any) -> Any:
    if kind == "B":
        return _base64(value)
    if kind == "BS":
        return [_base64(v) for v in value]
    if kind in ("L", "M"):
        return _wire(value)
    if kind in ("SS", "NS"):
        return list(value)
    return value


def _base64(value: bytes | str) -> str:
    """As moto's serializer writes it: a value moto holds as base64 text is decoded, then encoded."""
    raw = value if isinstance(value, bytes) else base64.b64decode(value)
    return base64.b64encode(raw).decode("ascii")


def _candidates(table: Any, index_name: str | None, hash_key: Any, conditions: Any) -> list[Any] | None:
    """The items a query can return, unsorted (None: cannot tell, let moto look at all)."""
    if not index_name:
        if hash_key is None:
            return None
        bucket = table.items.get(hash_key)
        if bucket is None:
            return []
        return list(bucket.values()) if table.range_key_attr else [bucket]
    if not conditions:
        return None
    wanted = list(conditions)
    found = []
    for item in _every_item(table):
        for name, value in wanted:
            have = item.attrs.get(name)
            if have is None or have != value:
                break
        else:
            found.append(item)
    return found


def _every_item(table: Any) -> Any:
    if table.range_key_attr is None:
        yield from table.items.values()
    else:
        for bucket in table.items.values():
            yield from bucket.values()
