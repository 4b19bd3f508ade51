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
  moto sorts and pages them, instead of sorting the whole table first.

The deployed bot never runs this: it is for the local stack, its tests and its benchmarks. It is
written against moto's internals, so pyproject pins moto's minor version, and ``install`` refuses
a moto whose internals are not the ones it knows.
"""

from __future__ import annotations

import copy
import inspect
import threading
from collections.abc import Callable
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
        from moto.dynamodb.models.table import Table
        from moto.dynamodb.responses import DynamoHandler

        if not moto.__version__.startswith(SUPPORTED_MOTO):
            raise RuntimeError(
                f"memorybot's local DynamoDB layer is written for moto {SUPPORTED_MOTO}x, not {moto.__version__}: "
                "reinstall with `make clean install`"
            )
        _serialise(DynamoHandler)
        DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
        _narrow_queries(Table)
        _installed = True


def _serialise(handler: Any) -> None:
    unlocked: Callable[[Any], Any] = handler.call_action

    def call_action(self: Any) -> Any:
        with REQUEST_LOCK:
            return unlocked(self)

    handler.call_action = call_action


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


def _narrow_queries(table_class: Any) -> None:
    """Hand moto's Table.query only the items that can match, for it to sort, page and filter."""
    unnarrowed = table_class.query
    signature = inspect.signature(unnarrowed)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked = signature.bind(self, *args, **kwargs).arguments
        candidates = _candidates(self, asked.get("index_name"), asked.get("hash_key"), asked.get("hash_key_conditions"))
        if candidates is None:
            return unnarrowed(self, *args, **kwargs)
        # Safe under REQUEST_LOCK: no other request sees this table while it answers.
        self.all_items = lambda: candidates
        try:
            return unnarrowed(self, *args, **kwargs)
        finally:
            del self.all_items

    table_class.query = query


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
