"""The selection index: what ranking needs of each of an owner's memories, in a few items.

The relevance selection (core/prompting/selection.py) ranks a profile by each memory's text (its terms),
its vector, its update time and id (ties, newest first) and its end (the reply leaves ended
ones out). A memory's item holds more than that (its sources, created/review bookkeeping, the
keys and index attributes of four indexes), and a Query returns every attribute as typed JSON for
botocore to parse, one item at a time. The index keeps only what ranking needs, packed, beside
the memories in the owner's own partition of the memories table:

- ``#index``: the header, sorted just before the memories (a profile's first page reads it with
  them). ``v``, bumped by every transaction that changes a memory of the owner; ``models``, the
  embedding models the entries' vectors come from; ``complete``, set once the index was built from
  the memories (the first read by a function that writes memories builds it: from a small
  profile's one page, or a large one read whole, written only if no change and no erasure came
  between that read and the build).
- ``~index#<nn>``: up to CHUNKS chunks, an id's chunk by its hash, sorted after the memories (a
  read of the memories never pages through them): one Binary attribute per memory, named by its id
  (a chunk has no other attribute but its keys).
  DynamoDB charges a write by the whole item's size, so chunks are kept small (about 21 entries,
  7 KB, at 2,000 memories): a change rewrites one of them; a Query reads them all for the sum of
  their sizes, whatever their number.

Each entry: created and updated time (microseconds), the last day (0: none), the vector's model
(its CRC-32, 0: none), the text (UTF-8) and the vector's bytes exactly as the memory item stores
them (adapters/vectors.py), so a memory rebuilt from its entry ranks exactly as the stored one:
the same ten are chosen. Every write of a memory writes its entry in the same transaction (the
store's ``apply``, ``add_once``, ``set_embedding`` and the unreadable's delete), so the index never
disagrees with the memories. None of these items has ``updated_at``, ``user_id``, ``stale_shard``
or ``text``: no profile read, export, scope listing, review index or reader of memories sees them.
"""

from __future__ import annotations

import secrets
import struct
import zlib
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..core.record.domain import Embedding, Memory, Owner
from . import vectors
from .dynamodb_items import Item, s

HEADER_KEY = "#index"
CHUNK_PREFIX = "~index#"
# The memories (and import markers) sort between these: after the header, before the chunks.
MEMORIES_END = "~"
VERSION = "v"
COMPLETE = "complete"
MODELS = "models"
# The header's generation: set by the write that creates the header, kept by every later one. An
# erasure deletes the header, and the next write starts counting versions again: the generation
# tells a new header from the erased one (adapters/index_cache.py keys its copies by both).
GENERATION = "g"
# Each chunk's count of changes, kept twice in the same transaction: on the chunk itself (CHUNK_COUNT)
# and on the header (COUNT_PREFIX + the chunk's number). A warm function's copy of a chunk is still
# the chunk while the two agree (adapters/index_cache.py): one GetItem of the header tells which
# chunks changed, and only those are read again. The build writes chunks and header without counts
# (0 for both); it runs once a generation, before any copy can be kept.
CHUNK_COUNT = "#n"
COUNT_PREFIX = "n"
# Set by a build that wrote every chunk (empty ones too) with the header's generation, which each
# chunk keeps: a chunk as a replica holds it (an eventually consistent read, half the read units)
# is then the chunk exactly when it has the header's generation and at least its count of changes.
# A new generation at every build and after every erasure: no earlier state of a chunk can pass.
# Only a large profile's build stamps (a small one's is read from its page, and most chunks would
# be empty items). An index without the mark (built small, or before the mark) is read strongly
# consistent, and a function that writes memories builds it again, stamped, once it is large.
STAMPED = "stamped"

_KEYS = ("owner", "memory_id")  # a chunk's other attributes are its entries
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# created µs, updated µs, valid_until's ordinal (0: none), the model's CRC-32 (0: none), text bytes
_ENTRY = struct.Struct("<qqIII")


# Chunks an owner's entries are spread over: more makes each change's write smaller (a write unit
# per KB of the chunk). The build writes them in one transaction, beside the header and the
# person's check: at most 100 items.
CHUNKS = 96


def chunk_key(memory_id: str) -> str:
    return f"{CHUNK_PREFIX}{zlib.crc32(memory_id.encode('ascii')) % CHUNKS:02x}"


def count_name(chunk: str) -> str:
    """The header's attribute counting the changes of ``chunk``."""
    return COUNT_PREFIX + chunk.removeprefix(CHUNK_PREFIX)


def _micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICROSECOND


def _time(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def model_code(model: str) -> int:
    return zlib.crc32(model.encode("utf-8")) or 1  # 0 means "no vector"


def encode_entry(memory: Memory) -> bytes:
    text = memory.text.encode("utf-8")
    embedding = memory.embedding
    head = _ENTRY.pack(
        _micros(memory.created_at),
        _micros(memory.updated_at),
        memory.valid_until.toordinal() if memory.valid_until else 0,
        model_code(embedding.model) if embedding else 0,
        len(text),
    )
    return head + text + (vectors.encode(embedding.vector) if embedding else b"")


def decode_entry(owner: Owner, memory_id: str, data: bytes, models: dict[int, str]) -> Memory:
    """The memory as ranking sees it: its sources (and review mark) are not in the index."""
    created, updated, until, model, length = _ENTRY.unpack_from(data)
    start = _ENTRY.size
    text = data[start : start + length].decode("utf-8")
    embedding = None
    if model:
        embedding = Embedding(models[model], vectors.decode(data[start + length :]))
    return Memory(
        owner.user_id,
        memory_id,
        text,
        _time(created),
        _time(updated),
        scope=owner.scope,
        embedding=embedding,
        valid_until=date.fromordinal(until) if until else None,
    )


def _key(owner: Owner, sort_key: str) -> Item:
    return {"owner": s(owner.key), "memory_id": s(sort_key)}


def new_generation() -> str:
    return secrets.token_hex(8)


def writes(table: str, owner: Owner, memory_id: str, memory: Memory | None) -> list[Item]:
    """The transaction items that keep the index in step with one memory's write: its entry set
    (``memory``: as written) or removed (None), the header's version and both counts of the
    chunk's changes bumped."""
    chunk_name = chunk_key(memory_id)
    header: dict[str, Any] = {
        "TableName": table,
        "Key": _key(owner, HEADER_KEY),
        "UpdateExpression": "SET #g = if_not_exists(#g, :g) ADD #v :one, #n :one",
        "ExpressionAttributeNames": {"#v": VERSION, "#g": GENERATION, "#n": count_name(chunk_name)},
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":g": s(new_generation())},
    }
    if memory is not None and memory.embedding is not None:
        header["UpdateExpression"] += ", #m :m"
        header["ExpressionAttributeNames"]["#m"] = MODELS
        header["ExpressionAttributeValues"][":m"] = {"SS": [memory.embedding.model]}
    # The chunk keeps the generation the build gave it (every chunk has one after a build); a chunk
    # first made before any build takes the header's new one, unread until a build stamps them all.
    chunk: dict[str, Any] = {
        "TableName": table,
        "Key": _key(owner, chunk_name),
        "ExpressionAttributeNames": {"#e": memory_id, "#n": CHUNK_COUNT, "#g": GENERATION},
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":g": header["ExpressionAttributeValues"][":g"]},
    }
    if memory is None:
        chunk["UpdateExpression"] = "SET #g = if_not_exists(#g, :g) REMOVE #e ADD #n :one"
    else:
        chunk["UpdateExpression"] = "SET #e = :e, #g = if_not_exists(#g, :g) ADD #n :one"
        chunk["ExpressionAttributeValues"][":e"] = {"B": encode_entry(memory)}
    return [{"Update": header}, {"Update": chunk}]


class Index:
    """An owner's index as read: the header's version (None: no header), whether it is complete,
    its generation, its count of each chunk's changes, and the chunks read."""

    def __init__(self, owner: Owner, header: Item | None, chunks: Iterable[Item] = ()) -> None:
        self.owner = owner
        self.version: int | None = None
        self.generation: str | None = None
        self.complete = False
        self.models: list[str] = []
        self.counts: dict[str, int] = {}  # a chunk not named: 0 (no change since the build)
        self.stamped = False
        if header is not None:
            self.stamped = bool(header.get(STAMPED, {}).get("BOOL"))
            self.version = int(header[VERSION]["N"]) if VERSION in header else 0
            self.complete = bool(header.get(COMPLETE, {}).get("BOOL"))
            self.models = list(header.get(MODELS, {}).get("SS", []))
            self.generation = header[GENERATION]["S"] if GENERATION in header else None
            self.counts = {
                CHUNK_PREFIX + name.removeprefix(COUNT_PREFIX): int(value["N"])
                for name, value in header.items()
                if name.startswith(COUNT_PREFIX) and len(name) == len(COUNT_PREFIX) + 2 and "N" in value
            }
        self._chunks = list(chunks)
        self.chunks = [item["memory_id"]["S"] for item in self._chunks]

    def by_chunk(self) -> dict[str, tuple[int, list[Memory]]]:
        """Each chunk read: its own count of changes, and its entries as memories."""
        models = {model_code(m): m for m in self.models}
        out: dict[str, tuple[int, list[Memory]]] = {}
        for item in self._chunks:
            count = int(item[CHUNK_COUNT]["N"]) if CHUNK_COUNT in item else 0
            out[item["memory_id"]["S"]] = (
                count,
                [
                    decode_entry(self.owner, name, bytes(value["B"]), models)
                    for name, value in item.items()
                    if "B" in value and name not in _KEYS
                ],
            )
        return out

    def memories(self) -> list[Memory]:
        return [m for _, entries in self.by_chunk().values() for m in entries]

    def unproven(self, replica: Iterable[Item]) -> tuple[list[Item], list[str]]:
        """Of chunks as a replica returned them (an eventually consistent read after this header):
        those that are each chunk as of this header or later (this generation, at least its count
        of changes), and the names of the chunks not proven so (older, another generation's, or
        missing), to be read strongly consistent."""
        proven = [
            item
            for item in replica
            if item.get(GENERATION, {}).get("S") == self.generation
            and int(item.get(CHUNK_COUNT, {}).get("N", "0")) >= self.counts.get(item["memory_id"]["S"], 0)
        ]
        found = {item["memory_id"]["S"] for item in proven}
        return proven, [name for name in all_chunks() if name not in found]


def header_attributes() -> list[str]:
    """Every attribute a header may hold but its keys."""
    return [VERSION, COMPLETE, STAMPED, MODELS, GENERATION] + [count_name(chunk) for chunk in all_chunks()]


def all_chunks() -> list[str]:
    return [f"{CHUNK_PREFIX}{n:02x}" for n in range(CHUNKS)]


def is_header(item: Item) -> bool:
    return item["memory_id"]["S"] == HEADER_KEY


def build(
    table: str, owner: Owner, memories: Iterable[Memory], index: Index, check: Item, *, stamped: bool
) -> list[Item]:
    """The transaction that writes the owner's whole index from ``memories``, read after the
    header was: conditioned on the header as read then (a change since makes it fail, never
    stale) and on ``check``, the person's record (an erasure since makes it fail). ``stamped``:
    every chunk written, an empty one too (a large profile's, whose chunks a first read takes from
    a replica); otherwise only the chunks holding an entry (a small profile's, read from its page)."""
    # A new generation: no chunk's state from before this build (its count restarts here) can pass
    # for one after it; a stamped build gives it to every chunk.
    generation = s(new_generation())
    chunks: dict[str, Item] = (
        {key: {**_key(owner, key), GENERATION: generation} for key in all_chunks()} if stamped else {}
    )
    models: set[str] = set()
    for memory in memories:
        key = chunk_key(memory.memory_id)
        chunks.setdefault(key, {**_key(owner, key), GENERATION: generation})
        chunks[key][memory.memory_id] = {"B": encode_entry(memory)}
        if memory.embedding is not None:
            models.add(memory.embedding.model)
    version = index.version or 0
    written = {
        **_key(owner, HEADER_KEY),
        VERSION: {"N": str(version + 1)},
        COMPLETE: {"BOOL": True},
        STAMPED: {"BOOL": stamped},
        GENERATION: generation,
    }
    if models:
        written[MODELS] = {"SS": sorted(models)}
    header: dict[str, Any] = {"TableName": table, "Item": written}
    if index.version is None:
        header["ConditionExpression"] = "attribute_not_exists(memory_id)"
    else:
        header |= {
            "ConditionExpression": "#v = :v",
            "ExpressionAttributeNames": {"#v": VERSION},
            "ExpressionAttributeValues": {":v": {"N": str(version)}},
        }
    # A chunk holds an entry exactly while its memory exists (every write keeps it so): each chunk
    # is written whole.
    return [{"Put": header}, check] + [{"Put": {"TableName": table, "Item": chunk}} for chunk in chunks.values()]


def keys_of(owner: Owner, index: Index) -> list[Item]:
    """Every item of the owner's index (the erasure deletes them)."""
    return [_key(owner, HEADER_KEY)] + [_key(owner, key) for key in index.chunks]
