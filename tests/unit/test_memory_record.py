"""The memory record's one codec (core/record/memory_record.py): each shape pinned as the stored rows,
the export files and the Jev contract have it, and every shape read back where it is read."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime, timedelta

import pytest

from memorybot.adapters import vectors
from memorybot.adapters.dynamodb_ledger import memory_from_json, memory_to_json
from memorybot.adapters.dynamodb_memories import memory_from_item, memory_item, stale_shard
from memorybot.adapters.jev_http import memory_body
from memorybot.core.record import memory_record
from memorybot.core.record.domain import Embedding, Memory, SourceRef
from memorybot.core.record.memory_record import FIELDS, Kind, RecordField, Shape
from memorybot.core.rights.commands import _memory_json
from memorybot.core.rights.importing import parse_row, source_rows

CREATED = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
UPDATED = datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=UTC)
REVIEWED = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
VECTOR = vectors.decode(vectors.encode((0.6, 0.8)))  # as stored: the round trip is exact from here

FULL = Memory(
    "111",
    "k3x9a",
    "姉はゆきで大阪に住んでいる",
    CREATED,
    UPDATED,
    scope="guild:42",
    reviewed_at=REVIEWED,
    sources=(SourceRef("900", "1001"), SourceRef("900", "1003")),
    embedding=Embedding("titan@256", VECTOR),
    valid_until=date(2026, 12, 31),
)
BARE = Memory("111", "m7pq2", "likes tea", CREATED, CREATED, scope="dm")


def test_the_ledger_state_is_the_json_rows_were_written_with():
    # Byte for byte as before the codec: rows already in memory_log must read back, and rollback
    # compares states read from them.
    assert memory_to_json(FULL) == (
        '{"created_at": "2026-11-01T09:30:00.000000Z", "memory_id": "k3x9a", "scope": "guild:42", '
        '"sources": ["900/1001", "900/1003"], "text": "姉はゆきで大阪に住んでいる", '
        '"updated_at": "2026-11-20T12:00:00.123456Z", "user_id": "111", "valid_until": "2026-12-31"}'
    )
    # unset: left out, as before (a row from before validUntil existed reads the same)
    assert {"sources", "valid_until"}.isdisjoint(json.loads(memory_to_json(BARE)))


def test_the_ledger_state_reads_back_without_its_marks():
    restored = memory_from_json(memory_to_json(FULL))
    assert restored == FULL  # equality ignores the marks ...
    assert (restored.reviewed_at, restored.embedding) == (None, None)  # ... which the ledger does not keep
    assert restored.sources == FULL.sources
    assert memory_from_json(memory_to_json(BARE)) == BARE
    assert memory_from_json(None) is None and memory_from_json("") is None


def test_a_ledger_state_from_before_sources_existed_reads_with_none():
    old = '{"created_at": "2026-11-01T09:30:00.000000Z", "memory_id": "m7pq2", "scope": "dm", "text": "likes tea", "updated_at": "2026-11-01T09:30:00.000000Z", "user_id": "111"}'
    assert memory_from_json(old) == BARE
    assert memory_from_json(old).sources == ()


def test_the_item_is_the_typed_attributes_the_table_holds():
    item = memory_item(FULL)
    assert item == {
        "owner": {"S": "guild:42#111"},
        "scope": {"S": "guild:42"},
        "user_id": {"S": "111"},
        "memory_id": {"S": "k3x9a"},
        "text": {"S": "姉はゆきで大阪に住んでいる"},
        "created_at": {"S": "2026-11-01T09:30:00.000000Z"},
        "updated_at": {"S": "2026-11-20T12:00:00.123456Z"},
        "stale_shard": {"S": stale_shard(FULL.owner)},
        # a Put starts the review queue afresh: the review mark is not written with the memory
        "review_after": {"S": "2026-11-20T12:00:00.123456Z"},
        "sources": {"L": [{"S": "900/1001"}, {"S": "900/1003"}]},
        "embedding": {"B": vectors.encode(VECTOR)},
        "embedding_model": {"S": "titan@256"},
        "valid_until": {"S": "2026-12-31"},
        # the moment it ends (midnight after its last day, in the deployment's zone: JST by default)
        "ends_at": {"S": "2026-12-31T15:00:00.000000Z"},
    }
    assert set(memory_item(BARE)) == {
        "owner",
        "scope",
        "user_id",
        "memory_id",
        "text",
        "created_at",
        "updated_at",
        "stale_shard",
        "review_after",
    }


def test_an_item_reads_back_whole_marks_included():
    stored = {**memory_item(FULL), "reviewed_at": {"S": "2026-11-25T03:00:00.000000Z"}}
    restored = memory_from_item(stored)
    assert restored == FULL
    assert (restored.reviewed_at, restored.embedding, restored.sources) == (REVIEWED, FULL.embedding, FULL.sources)
    bare = memory_from_item(memory_item(BARE))
    assert bare == BARE and (bare.reviewed_at, bare.embedding, bare.sources) == (None, None, ())


def test_an_embedding_without_its_model_is_no_embedding():
    item = memory_item(FULL)
    del item["embedding_model"]
    assert memory_from_item(item).embedding is None


def test_the_export_carries_each_of_its_keys():
    assert _memory_json(FULL) == {
        "id": "k3x9a",
        "text": "姉はゆきで大阪に住んでいる",
        "createdAt": "2026-11-01T09:30:00.000000Z",
        "updatedAt": "2026-11-20T12:00:00.123456Z",
        "sourceMessageIds": ["1001", "1003"],
        "validUntil": "2026-12-31",
    }
    assert _memory_json(BARE)["sourceMessageIds"] == []  # present, empty
    assert _memory_json(BARE)["validUntil"] is None  # present, null: a durable fact
    assert _memory_json(None) is None


def test_jevs_memory_is_id_text_update_time_and_end():
    assert memory_body(FULL) == {
        "id": "k3x9a",
        "text": "姉はゆきで大阪に住んでいる",
        "updated_at": "2026-11-20T12:00:00.123456Z",
        "valid_until": "2026-12-31",
    }
    assert memory_body(BARE)["valid_until"] is None


def test_an_import_row_gives_the_memory_it_names_under_a_fresh_id():
    raw = {
        "userId": "111",
        "scope": "guild:42",
        "text": "  姉はゆきで\n大阪に住んでいる ",
        "createdAt": "2026-11-01T18:30:00+09:00",
        "updatedAt": "2026-11-20T12:00:00.123456Z",
        "id": "legacy-7",
    }
    row = parse_row(0, "memories[0]", raw, now=UPDATED + timedelta(days=1))
    memory = row.memory("zz234")
    assert memory == Memory("111", "zz234", "姉はゆきで 大阪に住んでいる", CREATED, UPDATED, scope="guild:42")
    assert row.source_id == "legacy-7" and row.owner == memory.owner


def test_an_exported_memory_comes_back_through_the_import_as_it_was_but_its_sources():
    """What the export writes, the import reads: an export file's memory becomes a row."""
    export = {"userId": "111", "scopes": [{"scope": "guild:42", "memories": [_memory_json(FULL)]}]}
    [(where, raw)] = source_rows(export)
    row = parse_row(0, where, raw, now=UPDATED)
    # Message ids without their channels cannot be linked here: the sources stay behind.
    assert row.memory(FULL.memory_id) == dataclasses.replace(FULL, sources=())
    assert row.source_id == FULL.memory_id  # the export's id is the row's provenance


def test_the_keys_of_each_shape_come_from_the_declaration():
    assert memory_record.keys_of(Shape.ROW) == {"userId", "scope", "text", "createdAt", "updatedAt", "validUntil"}
    assert memory_record.keys_of(Shape.EXPORT) == {
        "id",
        "text",
        "createdAt",
        "updatedAt",
        "sourceMessageIds",
        "validUntil",
    }
    assert memory_record.keys_of(Shape.JEV) == {"id", "text", "updated_at", "valid_until"}
    assert memory_record.keys_of(Shape.LEDGER) == {
        "user_id",
        "memory_id",
        "scope",
        "text",
        "created_at",
        "updated_at",
        "sources",
        "valid_until",
    }
    assert memory_record.key_of("created_at", Shape.ROW) == "createdAt"
    with pytest.raises(LookupError):
        memory_record.key_of("embedding", Shape.EXPORT)


def test_every_memory_field_is_declared_once():
    assert sorted(f.name for f in FIELDS) == sorted(f.name for f in dataclasses.fields(Memory))


def test_a_memory_field_without_a_declaration_stops_the_import():
    @dataclasses.dataclass(frozen=True)
    class Grown(Memory):
        pinned_at: datetime | None = None

    with pytest.raises(TypeError, match=r"missing \['pinned_at'\]"):
        memory_record.check_declared(Grown, FIELDS)
    memory_record.check_declared(Grown, (*FIELDS, RecordField("pinned_at", Kind.OPTIONAL_TIME)))
    with pytest.raises(TypeError, match=r"unknown \['pinned_at'\]"):
        memory_record.check_declared(Memory, (*FIELDS, RecordField("pinned_at", Kind.OPTIONAL_TIME)))


def test_only_the_stored_shapes_are_read_back_into_a_memory():
    with pytest.raises(ValueError):
        memory_record.decode({"id": "k3x9a"}, Shape.EXPORT)
