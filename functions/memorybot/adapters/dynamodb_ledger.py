"""The rows of the ledger (memory_log): one per change or read of a person's memories.

The memory store writes them in the transaction of every change; the run store writes a
rollback's own row and the people store the rows of an erasure, so the mapping is here,
beside none of them. Before / after states are memories as JSON.
"""

from __future__ import annotations

import json
from datetime import timedelta

from .. import tables
from ..core.record import memory_record
from ..core.record.changes import LedgerEntry
from ..core.record.domain import Action, Actor, Memory, iso, parse_iso
from ..core.record.memory_record import Shape
from .dynamodb_items import (
    Item,
    bool_of,
    flag,
    int_of,
    n,
    optional_str,
    s,
    s_list,
    sources_attribute,
    sources_from,
    str_list_of,
    str_of,
    ttl_attribute,
)

LEDGER_EXPIRY = ttl_attribute(tables.MEMORY_LOG)  # only on read rows


def memory_to_json(memory: Memory) -> str:
    """A memory as a JSON object, for the ledger's before / after state (the record's ledger shape)."""
    return json.dumps(memory_record.encode(memory, Shape.LEDGER), ensure_ascii=False, sort_keys=True)


def memory_from_json(text: str | None) -> Memory | None:
    return memory_record.decode(json.loads(text), Shape.LEDGER) if text else None


def ledger_entry_key(entry: LedgerEntry) -> str:
    """Sort key: the time first, so a user's rows (and a run's, in by_run) order by time."""
    return entry.key


def ledger_item(entry: LedgerEntry, *, read_retention_days: int = 0) -> Item:
    """The row of ``entry``; a read row expires ``read_retention_days`` after it was made (0: never).

    Only reads expire: change rows are what rollback, export and ``/memory why`` stand on.
    """
    item: Item = {
        "owner": s(entry.owner.key),
        "scope": s(entry.scope),
        "user_id": s(entry.user_id),
        "entry_key": s(ledger_entry_key(entry)),
        "action": s(Action(entry.action).value),
        "actor": s(Actor(entry.actor).value),
        "reason": s(entry.reason),
        "memory_ids": s_list(entry.memory_ids),
        "at": s(iso(entry.at)),
    }
    if entry.before is not None:
        item["before"] = s(memory_to_json(entry.before))
    if entry.after is not None:
        item["after"] = s(memory_to_json(entry.after))
    if entry.run_id is not None:  # only then: the by_run index stays sparse
        item["run_id"] = n(entry.run_id)
    item.update(sources_attribute(entry.sources))
    if entry.redacted:
        item["redacted"] = flag(True)
    if entry.import_id is not None:
        item["import_id"] = s(entry.import_id)
    if entry.action is Action.READ and read_retention_days > 0:
        expires = entry.at + timedelta(days=read_retention_days)
        item[LEDGER_EXPIRY] = n(int(expires.timestamp()))  # DynamoDB TTL: epoch seconds
    return item


def ledger_from_item(item: Item) -> LedgerEntry:
    return LedgerEntry(
        user_id=item["user_id"]["S"],
        action=Action(item["action"]["S"]),
        actor=Actor(item["actor"]["S"]),
        reason=str_of(item, "reason"),
        at=parse_iso(item["at"]["S"]),
        memory_ids=str_list_of(item, "memory_ids"),
        before=memory_from_json(optional_str(item, "before")),
        after=memory_from_json(optional_str(item, "after")),
        run_id=int_of(item["run_id"]) if "run_id" in item else None,
        entry_id=item["entry_key"]["S"].rsplit("#", 1)[1],
        scope=item["scope"]["S"],
        sources=sources_from(item),
        redacted=bool_of(item, "redacted"),
        import_id=optional_str(item, "import_id"),
    )
