"""The memory record, declared once: every field of ``domain.Memory`` with the shapes it takes
outside the domain, and the one codec to and from each shape.

The shapes:

- ``ITEM``: the memories table's item (``adapters/dynamodb_memories.py`` turns these plain
  values into DynamoDB's typed attribute values, by kind);
- ``LEDGER``: a ledger row's before / after state (JSON, ``adapters/dynamodb_ledger.py``);
- ``EXPORT``: a memory in ``/memory export`` (``core/rights/commands.py``), which ``POST /memory/import``
  also reads back;
- ``ROW``: an import row (``core/rights/importing.py``: its keys, and each value's type by kind);
- ``JEV``: the ``memory`` object of the Jev HTTP contract (``adapters/jev_http.py``).

The stored shapes (item, ledger) leave an unset optional field out, so a sparse index stays
sparse and a row written before the field existed reads as its default; the shapes that people
and services read (export, Jev) carry each of their keys, ``null`` when unset.

Adding a field to a memory: the attribute on ``Memory``, one line in ``FIELDS`` naming the
shapes it appears in, and its tests. A ``Memory`` attribute without a line here, or a line
without an attribute, stops the import of this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from enum import Enum
from typing import Any

from .domain import Embedding, Memory, SourceRef, iso, parse_iso


class Kind(Enum):
    """What a field holds, so how each shape writes it."""

    TEXT = "text"  # a string: an id, the scope, the memory's text
    TIME = "time"  # a datetime, written with ``domain.iso`` (fixed width, UTC, sorts as text)
    OPTIONAL_TIME = "optional time"  # a datetime or None
    SOURCES = "sources"  # SourceRefs: "channel/message" (export: the message ids only)
    EMBEDDING = "embedding"  # an Embedding or None: the item's only (vector bytes, model)
    OPTIONAL_DATE = "optional date"  # a date or None, written "YYYY-MM-DD" (sorts as text)


class Shape(Enum):
    ITEM = "item"
    LEDGER = "ledger"
    EXPORT = "export"
    ROW = "row"
    JEV = "jev"


STORED_SHAPES = (Shape.ITEM, Shape.LEDGER)  # an unset optional field is left out


@dataclass(frozen=True)
class RecordField:
    """One field of a memory: its ``Memory`` attribute (also its name in the item and the ledger
    state) and the key it has in each other shape it appears in (None: not there)."""

    name: str
    kind: Kind
    # A memory's Put writes it. False: a mark set by an update of its own (the review's), which a
    # rewritten memory does not carry over.
    written: bool = True
    ledger: bool = True
    export: str | None = None
    row: str | None = None
    row_required: bool = False
    jev: str | None = None

    def key(self, shape: Shape) -> str | None:
        if shape is Shape.ITEM:
            return self.name
        if shape is Shape.LEDGER:
            return self.name if self.ledger else None
        return {Shape.EXPORT: self.export, Shape.ROW: self.row, Shape.JEV: self.jev}[shape]


FIELDS: tuple[RecordField, ...] = (
    RecordField("user_id", Kind.TEXT, row="userId", row_required=True),
    # An import row's "id" is the memory's id in the system it came from (the export's "id"),
    # never this deployment's: the import draws a fresh one.
    RecordField("memory_id", Kind.TEXT, export="id", jev="id"),
    RecordField("scope", Kind.TEXT, row="scope", row_required=True),  # export: the memory's group
    RecordField("text", Kind.TEXT, export="text", row="text", row_required=True, jev="text"),
    RecordField("created_at", Kind.TIME, export="createdAt", row="createdAt", row_required=True),
    RecordField("updated_at", Kind.TIME, export="updatedAt", row="updatedAt", jev="updated_at"),
    RecordField("reviewed_at", Kind.OPTIONAL_TIME, written=False, ledger=False),
    # An export names message ids without channels: an import cannot link them, so leaves them out.
    RecordField("sources", Kind.SOURCES, export="sourceMessageIds"),
    RecordField("embedding", Kind.EMBEDDING, ledger=False),
    # Until when it holds (a plan's end): every shape carries it, so a rollback restores it and
    # an export brings it back through the import.
    RecordField("valid_until", Kind.OPTIONAL_DATE, export="validUntil", row="validUntil", jev="valid_until"),
)


def check_declared(record: type, declared: tuple[RecordField, ...]) -> None:
    """TypeError unless ``declared`` names each field of the dataclass ``record`` exactly once."""
    attributes = [f.name for f in dataclasses.fields(record)]
    names = [f.name for f in declared]
    if sorted(attributes) != sorted(names):
        missing = sorted(set(attributes) - set(names))
        unknown = sorted(set(names) - set(attributes))
        raise TypeError(f"memory_record.FIELDS must declare every Memory field: missing {missing}, unknown {unknown}")


check_declared(Memory, FIELDS)


def fields_of(shape: Shape) -> Iterator[tuple[RecordField, str]]:
    """The fields a shape carries, each with its key there, in declaration order."""
    for f in FIELDS:
        key = f.key(shape)
        if key is not None:
            yield f, key


def keys_of(shape: Shape) -> frozenset[str]:
    return frozenset(key for _, key in fields_of(shape))


def key_of(name: str, shape: Shape) -> str:
    """The key of the field ``name`` in ``shape`` (LookupError when the shape has none)."""
    for f, key in fields_of(shape):
        if f.name == name:
            return key
    raise LookupError(f"{name} has no key in the {shape.value} shape")


# ---- encoding


def _plain(kind: Kind, value: Any, shape: Shape) -> Any:
    """A field's value as the shape writes it; None for an unset one."""
    if value is None:
        return None
    if kind is Kind.TIME or kind is Kind.OPTIONAL_TIME:
        return iso(value)
    if kind is Kind.OPTIONAL_DATE:
        return value.isoformat()
    if kind is Kind.SOURCES:
        if shape is Shape.EXPORT:
            return [ref.message_id for ref in value]
        return [ref.encode() for ref in value] if value or shape not in STORED_SHAPES else None
    return value  # text; an Embedding for the item, whose adapter writes it


def encode(memory: Memory, shape: Shape) -> dict[str, Any]:
    """The memory in ``shape``: JSON-ready values (an ``Embedding`` for the item's embedding).
    The item's encoding is what a memory's Put writes (marks left out)."""
    out: dict[str, Any] = {}
    for f, key in fields_of(shape):
        if shape is Shape.ITEM and not f.written:
            continue
        value = _plain(f.kind, getattr(memory, f.name), shape)
        if value is None and shape in STORED_SHAPES:
            continue
        out[key] = value
    return out


# ---- decoding (the stored shapes)


def _value(kind: Kind, plain: Any) -> Any:
    if kind is Kind.TIME or kind is Kind.OPTIONAL_TIME:
        return parse_iso(plain) if plain else None
    if kind is Kind.OPTIONAL_DATE:
        return date.fromisoformat(plain) if plain else None
    if kind is Kind.SOURCES:
        return tuple(SourceRef.decode(text) for text in plain)
    if kind is Kind.EMBEDDING:
        if not isinstance(plain, Embedding):
            raise TypeError("an embedding is decoded by the item's adapter")
        return plain
    return plain


def decode(data: Mapping[str, Any], shape: Shape) -> Memory:
    """A memory from a stored shape's plain values; an absent optional field is its default
    (KeyError for an absent required one)."""
    if shape not in STORED_SHAPES:
        raise ValueError(f"the {shape.value} shape is not read back into a Memory")
    values = {f.name: _value(f.kind, data[key]) for f, key in fields_of(shape) if key in data}
    return Memory(**values)
