"""What every DynamoDB adapter needs from the low-level client, written once.

- attribute values: the typed form (``{"S": ...}``, ``{"N": ...}``) in and out, and the
  attributes an item may lack;
- reading: one item by its key, and every item of a Query, page after page;
- writing: a conditional write whose failed condition is an answer, not an error; a
  transaction with its idempotency token; and, when a transaction's answer is lost, the
  read-back that tells whether it committed after all;
- error codes: what a ClientError says, and why a cancelled transaction was cancelled;
- the names of a table spec's indexes and TTL attribute, checked against ``tables`` at import time,
  and the sources attribute that memory rows and ledger rows share.

Nothing here knows a particular table: the stores build the keys, items and expressions.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from .. import tables
from ..core.record.terms import parse_iso

if TYPE_CHECKING:
    from ..core.record.domain import SourceRef

Item = dict[str, Any]  # one DynamoDB item in the low-level client's typed form

# Error codes (``Error.Code`` of a ClientError) and cancellation reasons the stores act on.
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
TRANSACTION_CONFLICT = "TransactionConflictException"
# The same two causes as they appear per item in a cancelled transaction's CancellationReasons.
REASON_CONDITION_FAILED = "ConditionalCheckFailed"
REASON_CONFLICT = "TransactionConflict"


# ---- attribute values: writing --------------------------------------------------


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int | str) -> dict[str, str]:
    """An integer as a DynamoDB Number; ``int()`` first, so a snowflake given as text is written as digits."""
    return {"N": str(int(value))}


def flag(value: bool) -> dict[str, bool]:
    return {"BOOL": bool(value)}


def s_list(values: Iterable[str]) -> dict[str, list[dict[str, str]]]:
    """A list of strings, as a List (L) rather than a String Set: it keeps order and duplicates."""
    return {"L": [s(v) for v in values]}


# ---- attribute values: reading --------------------------------------------------
# Optional attributes are left out of an item rather than stored empty (so a sparse index
# stays sparse): each reader says what an absent one means.


def int_of(attribute: Mapping[str, str]) -> int:
    """A DynamoDB Number as an integer; through Decimal, never float, so 20-digit snowflakes stay exact
    (DynamoDB keeps 38 significant digits)."""
    return int(Decimal(attribute["N"]))


def number_str(attribute: Mapping[str, str]) -> str:
    """A DynamoDB Number as the plain digits of an integer (a snowflake's text form)."""
    return str(int_of(attribute))


def str_of(item: Item, name: str, default: str = "") -> str:
    return item.get(name, {}).get("S", default)


def optional_str(item: Item, name: str) -> str | None:
    return item.get(name, {}).get("S")


def bool_of(item: Item, name: str) -> bool:
    """An absent flag is False."""
    return item.get(name, {}).get("BOOL", False)


def str_list_of(item: Item, name: str) -> tuple[str, ...]:
    return tuple(v["S"] for v in item.get(name, {}).get("L", []))


def optional_time(item: Item, name: str) -> datetime | None:
    """A time stored with ``domain.iso``, or None when the item has none (yet)."""
    text = optional_str(item, name)
    return parse_iso(text) if text else None


# ---- table specs -----------------------------------------------------------------


def index_name(spec: tables.TableSpec, name: str) -> str:
    """An index name, checked against the table spec at import time."""
    if not any(i.name == name for i in spec.local_indexes + spec.global_indexes):
        raise LookupError(f"{spec.logical_name} has no index {name!r}")
    return name


def ttl_attribute(spec: tables.TableSpec) -> str:
    if not spec.ttl_attribute:
        raise LookupError(f"{spec.logical_name} has no TTL attribute")
    return spec.ttl_attribute


# ---- the sources attribute (memory rows and ledger rows) --------------------------


def sources_attribute(sources: tuple[SourceRef, ...]) -> Item:
    return {"sources": s_list(ref.encode() for ref in sources)} if sources else {}


def sources_from(item: Item) -> tuple[SourceRef, ...]:
    from ..core.record.domain import SourceRef  # on first use: a /chat's answer reads no memory row

    return tuple(SourceRef.decode(text) for text in str_list_of(item, "sources"))


# ---- reading ----------------------------------------------------------------------


def get_item(client: Any, table: str, key: Item) -> Item | None:
    """The item under ``key``, read consistently (a read-back must see the write it checks), or None."""
    return client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")


def query_items(client: Any, **request: Any) -> Iterator[Item]:
    """Every item a Query returns, page after page, fetched lazily (stop early by not iterating).

    A page ends at ``Limit`` items or 1 MB, whichever comes first, so a caller that wants
    everything must follow LastEvaluatedKey; one that wants the first k takes k with islice.
    """
    while True:
        page = client.query(**request)
        yield from page.get("Items", [])
        last = page.get("LastEvaluatedKey")
        if not last:
            return
        request = {**request, "ExclusiveStartKey": last}


# ---- error codes -------------------------------------------------------------------


def error_code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def cancellation_code(error: ClientError, position: int) -> str | None:
    """Why item ``position`` of a cancelled transaction was cancelled, if it was (else None)."""
    if error_code(error) != TRANSACTION_CANCELED:
        return None
    reasons = error.response.get("CancellationReasons") or []
    if position >= len(reasons):
        return None
    return reasons[position].get("Code")


# ---- writing ------------------------------------------------------------------------


def conditional_write(operation: Callable[..., Any], **request: Any) -> bool:
    """Run one conditional PutItem, UpdateItem or DeleteItem (``operation`` is the client's method).

    False when the condition did not hold: that is the answer the condition was written for
    (the item is there already, someone else holds it), not a failure. Any other error raises.
    """
    try:
        operation(**request)
    except ClientError as error:
        if error_code(error) != CONDITIONAL_CHECK_FAILED:
            raise
        return False
    return True


def transact(client: Any, items: list[Item]) -> None:
    """One TransactWriteItems call, with a fresh idempotency token.

    A token per call: botocore's own retries of the call resend the same token, so a
    commit whose answer was lost is not applied twice, nor reported as cancelled.
    """
    client.transact_write_items(TransactItems=items, ClientRequestToken=secrets.token_hex(16))


def transact_or_find_committed(
    client: Any, items: list[Item], *, refused: Callable[[ClientError], bool], committed: Callable[[], bool]
) -> None:
    """``transact``, and when the outcome is unknown, the read-back that settles it.

    An error that ``refused`` does not recognise as the transaction being turned down (a
    timeout, a dropped connection, a 500 once botocore stops retrying) leaves open whether
    it committed. ``committed`` reads back what the transaction wrote: if it is there, the
    call succeeded after all; if not, the error is raised. A refusal is raised as it came.
    """
    try:
        transact(client, items)
    except ClientError as error:
        if refused(error) or not committed():
            raise
    except Exception:
        if not committed():
            raise
