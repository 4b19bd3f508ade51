"""The memory store's roles (``ports.MemoryStore``) on DynamoDB: the memories with their ledger (memory_log).

Every change to a memory commits in ONE TransactWriteItems call together with its
ledger row, conditioned on the record being exactly as it was read: conditional
transactions do here what the design's ConversationDO did (serialise the writes).

Scoping: every key and key condition below is built from the Owner (scope and user)
the caller passed (or, for ``apply``, the owner of the Change), so no method can reach
another person's rows, or the same person's rows in another scope. ``stale`` is the one
cross-owner read, for the nightly review.

The typed attribute values, paging, conditional writes and the "did it commit after
all?" read-back come from ``dynamodb_items``; the ledger rows from ``dynamodb_ledger``;
the person's check from ``dynamodb_people``. The memory (de)serialisers here are public
so the tests and benchmarks can reuse them.
"""

from __future__ import annotations

import heapq
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from itertools import islice
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.record import memory_record
from ..core.record.changes import Change, LedgerEntry
from ..core.record.domain import (
    CHANGE_ACTIONS,
    JST,
    REMEMBER_CLAIM_LEASE,
    Action,
    Actor,
    Embedding,
    Memory,
    Owner,
    SourceRef,
    iso,
    utcnow,
)
from ..core.record.memory_record import Kind, Shape
from ..core.record.person import Basis, PersonCheck
from ..core.record.ports import ConflictError, MemoryStore, MoveBlocked, PersonRefused
from . import profile_index, vectors
from .dynamodb_items import (
    REASON_CONDITION_FAILED,
    REASON_CONFLICT,
    TRANSACTION_CANCELED,
    Item,
    cancellation_code,
    conditional_write,
    error_code,
    flag,
    get_item,
    index_name,
    n,
    query_items,
    s,
    s_list,
    str_list_of,
    str_of,
    transact,
    transact_or_find_committed,
)
from .dynamodb_ledger import ledger_entry_key, ledger_from_item, ledger_item
from .dynamodb_people import person_check_item
from .index_cache import IndexCache, KeptChunk

logger = logging.getLogger(__name__)
R = TypeVar("R")

# Real DynamoDB cancels a transaction that races another one on the same item
# ("TransactionConflict"); the conditions are re-checked on each attempt, so retrying is safe.
TRANSACTION_CONFLICT_ATTEMPTS = 3
TRANSACTION_CONFLICT_BACKOFF_SECONDS = 0.05
# The owner's forgotten sources: one item in the memories table beside the owner's memories,
# under a sort key no memory id can take (ids are five lowercase letters and digits). It has no
# updated_at and no stale_shard, so no profile, review or stale index ever lists it; it has
# user_id and scope, so by_user finds it for export and erasure.
FORGOTTEN_KEY = "#forgotten"
# The memories the night changed, until the person is told (core/rights/receipts.py): beside the owner's
# memories like the forgotten sources, with user_id and scope so that an erasure finds it.
OVERNIGHT_KEY = "#overnight"


BY_UPDATED = index_name(tables.MEMORIES, "by_updated")
STALE = index_name(tables.MEMORIES, "stale")
REVIEW_QUEUE = index_name(tables.MEMORIES, "review_queue")
ENDING = index_name(tables.MEMORIES, "ending")
ENDS_AT = "ends_at"  # bookkeeping of the ending index, like review_after: not a field of the memory
STALE_PAGE = 100  # items read per page of the review queue (a filter keeps only the stale ones)
BY_RUN = index_name(tables.MEMORY_LOG, "by_run")
MEMORIES_BY_USER = index_name(tables.MEMORIES, "by_user")
LEDGER_BY_USER = index_name(tables.MEMORY_LOG, "by_user")


def stale_shard(owner: Owner) -> str:
    """The owner's shard of the ``stale`` index: a stable hash, the same in every process."""
    return str(zlib.crc32(owner.key.encode("utf-8")) % tables.STALE_SHARDS)


def memory_item(memory: Memory, zone: tzinfo = JST) -> Item:
    """The item a memory's Put writes: the record's item shape (core/record/memory_record.py) as typed
    attribute values, with the keys and the index bookkeeping (``zone``: the deployment's, which
    says when a memory with an end ends)."""
    item: Item = {
        "owner": s(memory.owner.key),
        "stale_shard": s(stale_shard(memory.owner)),
        # A written memory (added, updated, restored) starts its place in the review queue afresh.
        "review_after": s(iso(memory.updated_at)),
    }
    ends_at = memory.ends_at(zone)
    if ends_at is not None:  # only then: the ending index stays sparse
        item[ENDS_AT] = s(iso(ends_at))
    kinds = {key: f.kind for f, key in memory_record.fields_of(Shape.ITEM)}
    for key, value in memory_record.encode(memory, Shape.ITEM).items():
        item.update(_attributes(key, kinds[key], value))
    return item


def _attributes(key: str, kind: Kind, value: Any) -> Item:
    """One field's attributes: a string; a list of strings; an embedding as its vector's compact
    bytes (adapters/vectors.py) beside the model that made it."""
    if kind is Kind.EMBEDDING:
        return {key: {"B": vectors.encode(value.vector)}, _model_attribute(key): s(value.model)}
    if kind is Kind.SOURCES:
        return {key: s_list(value)}
    return {key: s(value)}


def _model_attribute(key: str) -> str:
    return f"{key}_model"


def memory_from_item(item: Item) -> Memory:
    plain: dict[str, Any] = {}
    for f, key in memory_record.fields_of(Shape.ITEM):
        if f.kind is Kind.EMBEDDING:
            if key in item and _model_attribute(key) in item:
                vector = vectors.decode(bytes(item[key]["B"]))
                plain[key] = Embedding(item[_model_attribute(key)]["S"], vector)
        elif f.kind is Kind.SOURCES:
            plain[key] = str_list_of(item, key)
        elif key in item:
            plain[key] = item[key]["S"]
    return memory_record.decode(plain, Shape.ITEM)


def _item_attribute_names() -> list[str]:
    names = []
    for f, key in memory_record.fields_of(Shape.ITEM):
        names += [key, _model_attribute(key)] if f.kind is Kind.EMBEDDING else [key]
    return names


# What a stored row may hold that no reader can turn back into a memory or a ledger row (a
# field missing, a time no parser reads, such as the three-digit year an import of "0999" was
# written back with before times were written fixed-width): the row is skipped by every reader,
# never the read, and an erasure deletes it all the same (``erase_unreadable``).
UNREADABLE = (KeyError, ValueError, TypeError, OverflowError)


_KEY_NAMES = ("owner", "user_id", "scope", "memory_id", "entry_key")


def _key_of(item: Item) -> dict[str, str]:
    """A row's keys for a log line: ids, never text."""
    return {
        name: str_of(item, name) for name in ("owner", "user_id", "scope", "memory_id", "entry_key") if name in item
    }


def _readable(items: Iterable[Item], read: Callable[[Item], R], what: str) -> Iterator[R]:
    """Each of ``items`` as ``read`` makes it; one that cannot be read is skipped, its key logged."""
    for item in items:
        try:
            yield read(item)
        except UNREADABLE as exc:
            logger.warning(f"{what} unreadable: skipped", extra={**_key_of(item), "error": type(exc).__name__})


def readable_memories(items: Iterable[Item]) -> Iterator[Memory]:
    return _readable(items, memory_from_item, "memory record")


def readable_ledger(items: Iterable[Item]) -> Iterator[LedgerEntry]:
    return _readable(items, ledger_from_item, "ledger row")


def _unreadable(items: Iterable[Item], read: Callable[[Item], object]) -> Iterator[Item]:
    for item in items:
        try:
            read(item)
        except UNREADABLE:
            yield item


def memory_key(owner: Owner, memory_id: str) -> Item:
    return {"owner": s(owner.key), "memory_id": s(memory_id)}


# An import marker (``add_once``) lives beside the owner's memories under this sort-key prefix:
# never a memory id (those are five characters of MEMORY_ID_ALPHABET), and with no index
# attribute (updated_at, user_id, stale_shard), so no profile read, export or review sees it.
MARKER_PREFIX = "once#"


def marker_key(owner: Owner, once: str) -> Item:
    return memory_key(owner, MARKER_PREFIX + once)


# "Remember this" claims a message under the same prefix (a message id, never a 32-digit hash):
# the claim's interaction id, its time, and whether the message was learned.
MESSAGE_MARKER = "message:"
CLAIMED, LEARNED = "claimed", "learned"


def message_marker_key(owner: Owner, message_id: str) -> Item:
    return marker_key(owner, MESSAGE_MARKER + message_id)


# What a Memory holds, for the whole-profile read (selection) and the backfill's scan.
_PROFILE_NAMES = {f"#a{i}": name for i, name in enumerate(_item_attribute_names())}
_PROFILE_PROJECTION = ", ".join(_PROFILE_NAMES)
# What a profile's first page reads of the selection index's header: all of it (its counts of each
# chunk's changes check the chunks a replica returns).
_HEADER_NAMES = {f"#h{i}": name for i, name in enumerate(profile_index.header_attributes())}
# A profile read first asks for this many items of the owner's memories: a profile that fits is
# used as read (one Query, as cheap as it gets); a larger one is ranked from its selection index
# and only the chosen are fetched (BatchGetItem costs a read unit an item, strongly consistent,
# so below about this size the whole read costs no more).
SMALL_PROFILE_ITEMS = 32
# The readers whose functions write memories build a missing selection index (the reply's role
# only reads them: it reads a profile whole until the extraction has built its index).
INDEX_BUILDERS = frozenset({Actor.EXTRACTION, Actor.NIGHTLY})
# The readers served the chosen memories as rebuilt from their index entries, with no fetch: the
# reply's prompt uses a memory's id, text, update time and end, all in the entry. The others keep
# the records (an extraction's change conditions on them, and its ledger row keeps their sources).
ENTRIES_SUFFICE = frozenset({Actor.REPLY})
# A BatchGetItem's unprocessed keys (throttled) are asked for again this many times, then it fails.
BATCH_GET_ATTEMPTS = 5
BATCH_GET_BACKOFF_SECONDS = 0.05
THROTTLED = "ProvisionedThroughputExceededException"
# The vector backfill reads at most this many 1 MB pages of the memories table a night
# (each ~128 read units at most, eventually consistent), from where the last night stopped.
BACKFILL_SCAN_PAGES = 8


def _is_marker(item: Item) -> bool:
    """Not a memory, though in the owner's partition: an import marker, the forgotten sources.
    Neither has a text; every memory has one."""
    return "text" not in item


def _cursor(owner_key: str, memory_id: str) -> str:
    return json.dumps([owner_key, memory_id])


def _cursor_key(cursor: str) -> Item:
    owner_key, memory_id = json.loads(cursor)
    return {"owner": s(owner_key), "memory_id": s(memory_id)}


class DynamoMemoryStore(MemoryStore):
    """Every role of ``ports.MemoryStore`` on the memories and memory_log tables."""

    def __init__(self, client: Any, settings: Settings, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._client = client
        self._memories = settings.table(tables.MEMORIES)
        self._log = settings.table(tables.MEMORY_LOG)
        self._people = settings.table(tables.PEOPLE)
        self._read_retention_days = settings.ledger_read_retention_days
        self._zone = settings.zone
        self._clock = clock
        self._cache = IndexCache(settings.index_cache_bytes)

    # -- reads of one person's profile

    def read_profile(
        self,
        owner: Owner,
        *,
        actor: Actor,
        reason: str,
        limit: int | None,
        run_id: int | None = None,
    ) -> list[Memory]:
        profile: list[Memory] = []
        if limit is None or limit > 0:
            items = query_items(
                self._client,
                TableName=self._memories,
                IndexName=BY_UPDATED,
                KeyConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": s(owner.key)},
                ScanIndexForward=False,
                ConsistentRead=True,
                **({"Limit": limit} if limit else {}),
            )
            profile = list(islice(readable_memories(items), limit))
        entry = LedgerEntry(
            owner.user_id,
            Action.READ,
            Actor(actor),
            reason,
            self._clock(),
            tuple(m.memory_id for m in profile),
            run_id=run_id,
            scope=owner.scope,
        )
        # A read without its ledger row must not be used: a failed put raises here.
        self._client.put_item(
            TableName=self._log,
            Item=ledger_item(entry, read_retention_days=self._read_retention_days),
            ConditionExpression="attribute_not_exists(entry_key)",
        )
        return profile

    def read_selected(
        self,
        owner: Owner,
        choose: Callable[[list[Memory]], list[Memory]],
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
        unused_if: Callable[[], bool] | None = None,
        entry_id: str = "",
    ) -> list[Memory]:
        started = self._clock()
        memories: list[Memory] | None = None
        indexed = False
        if self._cache.holds(owner.key):
            # Ranked from its index last time: the header alone tells which kept chunks still are the chunks.
            header = self._header(owner)
            index = profile_index.Index(owner, header)
            if header is None or not index.complete:
                self._cache.evict(owner.key)  # erased since: read as if never kept
            else:
                memories, indexed = self._indexed(owner, header, self._cache.get(owner.key, index.generation)), True
        if memories is None:
            # A first page of the owner's own partition (the base table), projecting what a Memory
            # holds, the selection index's header first: a small profile is used as read; a larger
            # one is ranked from its index (once built).
            first = self._client.query(**self._memories_request(owner, Limit=SMALL_PROFILE_ITEMS + 1))
            items = first.get("Items", [])
            header = next((i for i in items if profile_index.is_header(i)), None)
            index = profile_index.Index(owner, header)
            # (an owner with no memory yet has nothing to index: its first write starts the header)
            # (a large profile's index built small, or before chunks carried their generation, is
            # built again, once, stamped: profile_index.STAMPED)
            large = "LastEvaluatedKey" in first
            build = actor in INDEX_BUILDERS and not (index.complete and (index.stamped or not large))
            if not large:
                memories = list(readable_memories(i for i in items if not _is_marker(i)))
            elif index.complete and not build:
                memories, indexed = self._indexed(owner, header, None), True
            else:
                memories = self._whole_profile(owner)
            if build and (memories or index.version is not None):
                self._build_index(owner, memories, index, started, stamped=large)
        if unused_if is not None and unused_if():
            return []  # read, never used: no row
        chosen = choose(memories)
        if indexed and actor not in ENTRIES_SUFFICE:
            chosen = self._fetch(owner, chosen)
        self.log_read(
            owner, tuple(m.memory_id for m in chosen), actor=actor, reason=reason, run_id=run_id, entry_id=entry_id
        )
        return chosen

    def _header(self, owner: Owner) -> Item | None:
        """The owner's index header alone (strongly consistent: every change committed before it
        is counted in its version)."""
        return self._client.get_item(
            TableName=self._memories,
            Key=memory_key(owner, profile_index.HEADER_KEY),
            ConsistentRead=True,
        ).get("Item")

    def _indexed(self, owner: Owner, header: Item | None, kept: dict[str, KeptChunk] | None) -> list[Memory]:
        """The owner's memories as their index holds them, read after ``header``: with ``kept``
        (this function's copy, same generation), only the chunks whose count of changes differs
        from the header's are read again; without, every chunk (a stamped index's from a replica,
        the chunks it cannot prove read again). Kept for the next read."""
        index = profile_index.Index(owner, header)
        stale: list[str] = []
        if kept is not None:
            counted = index.counts.keys() | kept.keys()
            stale = [key for key in counted if index.counts.get(key, 0) != (kept[key].count if key in kept else 0)]
        elif index.stamped:
            # Every chunk eventually consistent (half the read units), each checked against the
            # header (read strongly consistent before); those not proven the chunk as of the header
            # or later (behind, another generation's, missing) are stale, read again as below.
            proven, stale = index.unproven(self._index_items(owner, consistent=False))
            if len(stale) <= profile_index.CHUNKS // 2:
                read = profile_index.Index(owner, header, proven).by_chunk()
                kept = {key: KeptChunk.of(count, entries) for key, (count, entries) in read.items()}
        if kept is None or len(stale) > profile_index.CHUNKS // 2:  # (past half, one Query costs no more)
            read = self._index(owner, header).by_chunk()
            kept = {key: KeptChunk.of(count, entries) for key, (count, entries) in read.items()}
        elif stale:
            items = self._batch_get([memory_key(owner, key) for key in stale])
            read = profile_index.Index(owner, header, items).by_chunk()
            for key in stale:  # a chunk that never had an entry has no item
                count, entries = read.get(key, (index.counts.get(key, 0), []))
                kept[key] = KeptChunk.of(count, entries)
        self._cache.put(owner.key, index.generation, kept)
        return [memory for chunk in kept.values() for memory in chunk.memories]

    def _memories_request(self, owner: Owner, **request: Any) -> dict[str, Any]:
        """A consistent Query of the owner's memories (and import markers), after their selection
        index's header (read first) and before its chunks."""
        return {
            "TableName": self._memories,
            "KeyConditionExpression": "#owner = :owner AND memory_id BETWEEN :header AND :end",
            "ProjectionExpression": f"{_PROFILE_PROJECTION}, {', '.join(_HEADER_NAMES)}",
            "ExpressionAttributeNames": {"#owner": "owner", **_HEADER_NAMES, **_PROFILE_NAMES},
            "ExpressionAttributeValues": {
                ":owner": s(owner.key),
                ":header": s(profile_index.HEADER_KEY),
                ":end": s(profile_index.MEMORIES_END),
            },
            "ConsistentRead": True,
            **request,
        }

    def _whole_profile(self, owner: Owner) -> list[Memory]:
        items = query_items(self._client, **self._memories_request(owner))
        return list(readable_memories(i for i in items if not _is_marker(i)))

    def _index(self, owner: Owner, header: Item | None) -> profile_index.Index:
        return profile_index.Index(owner, header, self._index_items(owner, consistent=True))

    def _index_items(self, owner: Owner, *, consistent: bool) -> list[Item]:
        return list(
            query_items(
                self._client,
                TableName=self._memories,
                KeyConditionExpression="#owner = :owner AND begins_with(memory_id, :chunk)",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": s(owner.key), ":chunk": s(profile_index.CHUNK_PREFIX)},
                ConsistentRead=consistent,
            )
        )

    def _build_index(
        self, owner: Owner, memories: list[Memory], read: profile_index.Index, since: datetime, *, stamped: bool
    ) -> None:
        """The owner's selection index from ``memories``, read (after ``read``'s header) from
        ``since``; refused if any change or an erasure came after that read, and then the next
        read builds it."""
        check = person_check_item(self._people, PersonCheck(owner.user_id, since, Basis.STORE))
        try:
            transact(self._client, profile_index.build(self._memories, owner, memories, read, check, stamped=stamped))
        except Exception as exc:  # noqa: BLE001 - overtaken, too large, or no answer: the next read builds it
            logger.info("selection index not built", extra={"error": type(exc).__name__})

    def _fetch(self, owner: Owner, chosen: list[Memory]) -> list[Memory]:
        """The chosen memories' records (one BatchGetItem, consistent), in the chosen order. The
        index is written with every memory in one transaction, so each is there as ranked."""
        if not chosen:
            return []
        keys = [memory_key(owner, m.memory_id) for m in chosen]
        read = self._batch_get(
            keys, ProjectionExpression=_PROFILE_PROJECTION, ExpressionAttributeNames=dict(_PROFILE_NAMES)
        )
        found = {memory.memory_id: memory for memory in readable_memories(read)}
        records = []
        for ranked in chosen:
            record = found.get(ranked.memory_id)
            if record is None or (record.text, record.updated_at) != (ranked.text, ranked.updated_at):
                logger.warning("selection index disagrees with a memory", extra={"memory_id": ranked.memory_id})
            if record is not None:
                records.append(record)
        return records

    def _batch_get(self, keys: list[Item], **options: Any) -> list[Item]:
        """The items of ``keys`` in the memories table (at most 100), strongly consistent; keys left
        unprocessed (throttled) asked for again, a bounded number of times."""
        request: dict[str, Any] = {self._memories: {"Keys": keys, "ConsistentRead": True, **options}}
        found: list[Item] = []
        for attempt in range(1, BATCH_GET_ATTEMPTS + 1):
            answer = self._client.batch_get_item(RequestItems=request)
            found += answer.get("Responses", {}).get(self._memories, [])
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                return found
            if attempt < BATCH_GET_ATTEMPTS:
                time.sleep(BATCH_GET_BACKOFF_SECONDS * attempt)
        # As a throttled Query reaches its caller once botocore's own retries are spent.
        raise ClientError({"Error": {"Code": THROTTLED, "Message": "items left unread"}}, "BatchGetItem")

    def set_embedding(self, memory: Memory, embedding: Embedding) -> bool:
        # Derived from the text, like a review mark: no ledger row. Only onto the record as read,
        # and into its selection index entry in the same transaction.
        values = {":vector": {"B": vectors.encode(embedding.vector)}, ":model": s(embedding.model)}
        vector = {
            "Update": {
                "TableName": self._memories,
                "Key": memory_key(memory.owner, memory.memory_id),
                "UpdateExpression": "SET embedding = :vector, embedding_model = :model",
                **_unchanged(memory, values),
            }
        }
        with_vector = replace(memory, embedding=embedding)
        index = profile_index.writes(self._memories, memory.owner, memory.memory_id, with_vector)
        for attempt in range(1, TRANSACTION_CONFLICT_ATTEMPTS + 1):
            try:
                transact(self._client, [vector, *index])
                return True
            except ClientError as error:
                if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                    return False  # changed or deleted meanwhile
                if not _conflicted(error):
                    raise
                if attempt < TRANSACTION_CONFLICT_ATTEMPTS:
                    time.sleep(TRANSACTION_CONFLICT_BACKOFF_SECONDS * attempt)
        return False  # still contended: the nightly backfill gives it one

    def _mark_if_unchanged(self, memory: Memory, update: str, values: dict[str, Any]) -> bool:
        """Set a mark that is not a change of the memory (no ledger row), only if the record is
        still exactly ``memory``; False when it was changed or deleted meanwhile."""
        return conditional_write(
            self._client.update_item,
            TableName=self._memories,
            Key=memory_key(memory.owner, memory.memory_id),
            UpdateExpression=update,
            **_unchanged(memory, values),
        )

    def without_embedding(self, model: str, limit: int, *, start: str = "") -> tuple[list[Memory], str]:
        found: list[Memory] = []
        request: dict[str, Any] = {
            "TableName": self._memories,
            "FilterExpression": "attribute_not_exists(embedding_model) OR embedding_model <> :model",
            "ProjectionExpression": _PROFILE_PROJECTION,
            "ExpressionAttributeNames": dict(_PROFILE_NAMES),
            "ExpressionAttributeValues": {":model": s(model)},
        }
        if start:
            request["ExclusiveStartKey"] = _cursor_key(start)
        for _ in range(BACKFILL_SCAN_PAGES):
            page = self._client.scan(**request)
            for memory in readable_memories(i for i in page.get("Items", []) if not _is_marker(i)):
                found.append(memory)
                if len(found) >= limit:
                    # Stopped inside the page: the next pass starts right after this memory.
                    last = found[-1]
                    return found, _cursor(last.owner.key, last.memory_id)
            last_key = page.get("LastEvaluatedKey")
            if not last_key:
                return found, ""  # the table's end: the next pass starts from its beginning
            request["ExclusiveStartKey"] = last_key
        return found, _cursor(last_key["owner"]["S"], last_key["memory_id"]["S"])

    def log_read(
        self,
        owner: Owner,
        memory_ids: tuple[str, ...],
        *,
        actor: Actor,
        reason: str,
        run_id: int | None = None,
        entry_id: str = "",
    ) -> None:
        entry = LedgerEntry(
            owner.user_id,
            Action.READ,
            Actor(actor),
            reason,
            self._clock(),
            tuple(memory_ids),
            run_id=run_id,
            scope=owner.scope,
        )
        if entry_id:  # a named row (a reply's: its "Why?" finds it by this name)
            entry = replace(entry, entry_id=entry_id)
        self._client.put_item(
            TableName=self._log,
            Item=ledger_item(entry, read_retention_days=self._read_retention_days),
            ConditionExpression="attribute_not_exists(entry_key)",
        )

    def get(self, owner: Owner, memory_id: str) -> Memory | None:
        item = get_item(self._client, self._memories, memory_key(owner, memory_id))
        return next(readable_memories([item]), None) if item else None

    # -- changes

    def apply(
        self,
        change: Change,
        *,
        actor: Actor,
        run_id: int | None = None,
        ledger_action: Action | None = None,
        redacted: bool = False,
        check: PersonCheck | None = None,
        ledger_scope: str | None = None,
    ) -> LedgerEntry:
        entry = LedgerEntry(
            user_id=change.user_id,
            action=Action(ledger_action) if ledger_action else change.action,
            actor=Actor(actor),
            reason=change.reason,
            at=self._clock(),
            memory_ids=(change.memory_id,),
            before=None if redacted else change.before,
            after=None if redacted else change.after,
            run_id=run_id,
            scope=ledger_scope or change.owner.scope,
            sources=(change.after or change.before).sources,  # type: ignore[union-attr]
            redacted=redacted,
        )
        if change.moves:  # where it was (as read), where it goes (the id free there), then the row
            return self._move(change, entry, check)
        transaction = [
            self._memory_write(change),
            {
                "Put": {
                    "TableName": self._log,
                    "Item": ledger_item(entry),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            },
        ]
        if change.action is Action.DELETE and entry.actor is Actor.COMMAND and entry.sources:
            # A forget by the person (or their Undo of an add): its sources never teach again,
            # recorded with the delete.
            transaction.append(self._forgotten_write(change.owner, entry.sources))
        check_at = len(transaction) if check is not None else None
        if check is not None:  # after the memory's own write (position 0) and its ledger row
            transaction.append(person_check_item(self._people, check))
        transaction += profile_index.writes(self._memories, change.owner, change.memory_id, change.after)
        for attempt in range(1, TRANSACTION_CONFLICT_ATTEMPTS + 1):
            try:
                # Any other failure, or no answer at all, may hide a commit: the ledger row,
                # written in the same transaction, tells (a fresh token per attempt).
                transact_or_find_committed(
                    self._client,
                    transaction,
                    refused=lambda error: _change_refused(error, check_at),
                    committed=lambda: self._committed(entry),
                )
                return entry
            except ClientError as error:
                if check_at is not None and cancellation_code(error, check_at) == REASON_CONDITION_FAILED:
                    raise PersonRefused(change.memory_id) from error
                code = cancellation_code(error, 0)
                if code == REASON_CONDITION_FAILED:
                    raise ConflictError(change.memory_id) from error
                if _conflicted(error):
                    if attempt < TRANSACTION_CONFLICT_ATTEMPTS:
                        time.sleep(TRANSACTION_CONFLICT_BACKOFF_SECONDS * attempt)
                        continue
                    # Still contended: someone else keeps changing the record; drop ours.
                    raise ConflictError(change.memory_id) from error
                raise
        raise AssertionError("unreachable")

    def _move(self, change: Change, entry: LedgerEntry, check: PersonCheck | None) -> LedgerEntry:
        before, after = change.before, change.after
        assert before is not None and after is not None
        transaction = [
            {
                "Delete": {
                    "TableName": self._memories,
                    "Key": memory_key(before.owner, before.memory_id),
                    **_unchanged(before),
                }
            },
            {
                "Put": {
                    "TableName": self._memories,
                    "Item": memory_item(after, self._zone),
                    "ConditionExpression": "attribute_not_exists(memory_id)",
                }
            },
            {
                "Put": {
                    "TableName": self._log,
                    "Item": ledger_item(entry),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            },
        ]
        if check is not None:  # the record's writes and the row keep their positions
            transaction.append(person_check_item(self._people, check))
        # Both owners' selection indexes: the entry leaves one and joins the other.
        transaction += profile_index.writes(self._memories, before.owner, before.memory_id, None)
        transaction += profile_index.writes(self._memories, after.owner, after.memory_id, after)
        try:
            transact_or_find_committed(
                self._client,
                transaction,
                refused=lambda error: (
                    _conflicted(error) or any(cancellation_code(error, i) == REASON_CONDITION_FAILED for i in (0, 1, 3))
                ),
                committed=lambda: self._committed(entry),
            )
        except ClientError as error:
            if check is not None and cancellation_code(error, 3) == REASON_CONDITION_FAILED:
                raise PersonRefused(before.memory_id) from error
            if cancellation_code(error, 1) == REASON_CONDITION_FAILED:
                raise MoveBlocked(before.memory_id) from error
            if cancellation_code(error, 0) == REASON_CONDITION_FAILED or _conflicted(error):
                raise ConflictError(before.memory_id) from error
            raise
        return entry

    def _forgotten_write(self, owner: Owner, sources: tuple[SourceRef, ...]) -> Item:
        return {
            "Update": {
                "TableName": self._memories,
                "Key": memory_key(owner, FORGOTTEN_KEY),
                "UpdateExpression": "ADD forgotten :ids SET #scope = :scope, user_id = :user",
                "ExpressionAttributeNames": {"#scope": "scope"},
                "ExpressionAttributeValues": {
                    ":ids": {"SS": sorted({ref.message_id for ref in sources})},
                    ":scope": s(owner.scope),
                    ":user": s(owner.user_id),
                },
            }
        }

    def _committed(self, entry: LedgerEntry) -> bool:
        key = {"owner": s(entry.owner.key), "entry_key": s(ledger_entry_key(entry))}
        return get_item(self._client, self._log, key) is not None

    def _memory_write(self, change: Change) -> Item:
        """The Put or Delete of the memory, conditioned on the record being exactly ``change.before``."""
        if change.before is None:
            return {
                "Put": {
                    "TableName": self._memories,
                    "Item": memory_item(change.after, self._zone),  # type: ignore[arg-type]  # Change guarantees one side
                    "ConditionExpression": "attribute_not_exists(memory_id)",
                }
            }
        before = change.before
        unchanged = _unchanged(before)
        if change.after is None:
            return {
                "Delete": {
                    "TableName": self._memories,
                    "Key": memory_key(before.owner, before.memory_id),
                    **unchanged,
                }
            }
        return {"Put": {"TableName": self._memories, "Item": memory_item(change.after, self._zone), **unchanged}}

    def add_once(
        self,
        memory: Memory,
        once: str,
        *,
        actor: Actor,
        reason: str,
        import_id: str | None = None,
        check: PersonCheck | None = None,
    ) -> LedgerEntry | None:
        entry = LedgerEntry(
            memory.user_id,
            Action.ADD,
            Actor(actor),
            reason,
            self._clock(),
            (memory.memory_id,),
            after=memory,
            scope=memory.scope,
            sources=memory.sources,
            import_id=import_id,
        )
        absent = "attribute_not_exists(memory_id)"
        transaction = [
            {
                "Put": {
                    "TableName": self._memories,
                    "Item": memory_item(memory, self._zone),
                    "ConditionExpression": absent,
                }
            },
            # The marker: the one conditional write that makes the add happen once per key.
            {
                "Put": {
                    "TableName": self._memories,
                    "Item": {**marker_key(memory.owner, once), "at": s(iso(entry.at))},
                    "ConditionExpression": absent,
                }
            },
            {
                "Put": {
                    "TableName": self._log,
                    "Item": ledger_item(entry),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            },
        ]
        if check is not None:  # the memory, the marker and the row keep their positions
            transaction.append(person_check_item(self._people, check))
        transaction += profile_index.writes(self._memories, memory.owner, memory.memory_id, memory)
        for attempt in range(1, TRANSACTION_CONFLICT_ATTEMPTS + 1):
            try:
                transact_or_find_committed(
                    self._client,
                    transaction,
                    refused=lambda error: (
                        _add_once_refused(error)
                        or (check is not None and cancellation_code(error, 3) == REASON_CONDITION_FAILED)
                    ),
                    committed=lambda: self._committed(entry),
                )
                return entry
            except ClientError as error:
                if check is not None and cancellation_code(error, 3) == REASON_CONDITION_FAILED:
                    raise PersonRefused(memory.memory_id) from error
                if cancellation_code(error, 1) == REASON_CONDITION_FAILED:
                    return None  # added by an earlier (or a concurrent) call with the same key
                if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                    raise ConflictError(memory.memory_id) from error
                if _conflicted(error):
                    # A concurrent call holds the marker: once it commits, the retry finds it.
                    if attempt < TRANSACTION_CONFLICT_ATTEMPTS:
                        time.sleep(TRANSACTION_CONFLICT_BACKOFF_SECONDS * attempt)
                        continue
                    raise ConflictError(memory.memory_id) from error
                raise
        raise AssertionError("unreachable")

    def has_marker(self, owner: Owner, once: str) -> bool:
        return get_item(self._client, self._memories, marker_key(owner, once)) is not None

    def claim_message(self, owner: Owner, message_id: str, claim: str, now: datetime) -> bool:
        key = message_marker_key(owner, message_id)
        claimed = conditional_write(
            self._client.put_item,
            TableName=self._memories,
            Item={**key, "state": s(CLAIMED), "claim": s(claim), "at": s(iso(now))},
            ConditionExpression="attribute_not_exists(memory_id) OR (#state = :claimed AND #at < :lapsed)",
            ExpressionAttributeNames={"#state": "state", "#at": "at"},
            ExpressionAttributeValues={":claimed": s(CLAIMED), ":lapsed": s(iso(now - REMEMBER_CLAIM_LEASE))},
        )
        if claimed:
            return True
        # Refused, or this very claim committed and its answer was lost (botocore sent it again).
        found = get_item(self._client, self._memories, key)
        return found is not None and str_of(found, "claim") == claim and str_of(found, "state") == CLAIMED

    def settle_message(self, owner: Owner, message_id: str, claim: str, *, learned: bool) -> None:
        ours = {
            "ConditionExpression": "#claim = :claim AND #state = :claimed",
            "ExpressionAttributeNames": {"#claim": "claim", "#state": "state"},
        }
        values = {":claim": s(claim), ":claimed": s(CLAIMED)}
        key = message_marker_key(owner, message_id)
        if learned:
            conditional_write(
                self._client.update_item,
                TableName=self._memories,
                Key=key,
                UpdateExpression="SET #state = :learned",
                ExpressionAttributeValues={**values, ":learned": s(LEARNED)},
                **ours,
            )
        else:
            conditional_write(
                self._client.delete_item,
                TableName=self._memories,
                Key=key,
                ExpressionAttributeValues=values,
                **ours,
            )

    def take_back(self, added: LedgerEntry, once: str, *, reason: str) -> bool:
        memory = added.after
        if memory is None:
            raise ValueError("only an add is taken back")
        entry = LedgerEntry(
            memory.user_id,
            Action.DELETE,
            Actor.IMPORT,
            reason,
            self._clock(),
            (memory.memory_id,),
            before=memory,
            scope=memory.scope,
            import_id=added.import_id,
        )
        transaction = [
            self._memory_write(Change(Action.DELETE, memory, None, reason)),
            {"Delete": {"TableName": self._memories, "Key": marker_key(memory.owner, once)}},
            {
                "Put": {
                    "TableName": self._log,
                    "Item": ledger_item(entry),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            },
            *profile_index.writes(self._memories, memory.owner, memory.memory_id, None),
        ]
        try:
            transact_or_find_committed(
                self._client,
                transaction,
                refused=lambda error: cancellation_code(error, 0) == REASON_CONDITION_FAILED or _conflicted(error),
                committed=lambda: self._committed(entry),
            )
        except ClientError as error:
            if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                return False
            raise
        return True

    # -- the nightly review (every user)

    def stale(self, updated_before: datetime, limit: int) -> list[Memory]:
        if limit <= 0:
            return []
        cutoff = iso(updated_before)
        queues: list[list[Memory]] = []
        for shard in range(tables.STALE_SHARDS):
            # The review queue, least recently reviewed first; only the stale ones count.
            queued = self._review_shard(shard, REVIEW_QUEUE, "", "updated_at < :cutoff", {":cutoff": s(cutoff)})
            # Records written before review_after existed are not in that index: they are found
            # by their update time (their place in the queue), until a write or a review marks them.
            unqueued = self._review_shard(
                shard, STALE, "updated_at < :cutoff", "attribute_not_exists(review_after)", {":cutoff": s(cutoff)}
            )
            # No shard can contribute more than ``limit`` to the first ``limit`` overall.
            for items in (queued, unqueued):
                queues.append(sorted(islice(readable_memories(items), limit), key=_review_order))
        return list(islice(heapq.merge(*queues, key=_review_order), limit))

    def ended(self, now: datetime, limit: int) -> list[Memory]:
        if limit <= 0:
            return []
        queues: list[list[Memory]] = []
        for shard in range(tables.STALE_SHARDS):
            # Ended by now, earliest first; untouched since: no write or review after its end.
            items = self._review_shard(
                shard, ENDING, "ends_at <= :now", "review_after < ends_at", {":now": s(iso(now))}
            )
            queues.append(list(islice(readable_memories(items), limit)))
        return list(islice(heapq.merge(*queues, key=lambda m: m.ends_at(self._zone) or now), limit))

    def _review_shard(
        self, shard: int, index: str, sort_condition: str, keep: str, values: dict[str, Any]
    ) -> Iterator[Item]:
        """One shard of a review index in the index's order, a page of STALE_PAGE at a time and
        only as far as the caller reads, keeping what ``keep`` (a filter) allows;
        ``sort_condition`` narrows the sort key, when the index has one."""
        key = "stale_shard = :shard" + (f" AND {sort_condition}" if sort_condition else "")
        return query_items(
            self._client,
            TableName=self._memories,
            IndexName=index,
            KeyConditionExpression=key,
            FilterExpression=keep,
            ExpressionAttributeValues={":shard": s(str(shard)), **values},
            ScanIndexForward=True,
            Limit=STALE_PAGE,
        )

    def mark_reviewed(self, memory: Memory, at: datetime) -> None:
        # A failed condition means changed or deleted meanwhile: its own write placed it in the queue.
        self._mark_if_unchanged(memory, "SET reviewed_at = :at, review_after = :at", {":at": s(iso(at))})

    # -- the ledger

    def ledger_for_run(self, run_id: int) -> list[LedgerEntry]:
        items = query_items(
            self._client,
            TableName=self._log,
            IndexName=BY_RUN,
            KeyConditionExpression="run_id = :run",
            ExpressionAttributeValues={":run": n(run_id)},
            ScanIndexForward=False,
        )
        return list(readable_ledger(items))

    def ledger_for(
        self,
        owner: Owner,
        limit: int | None = 100,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LedgerEntry]:
        if limit is not None and limit <= 0:
            return []
        if since is not None or until is not None:  # keys start with their time: one key range
            low = iso(since) if since is not None else ""
            high = (iso(until) if until is not None else "9999") + "~"  # "~" sorts after "#<entry id>"
            items = query_items(
                self._client,
                TableName=self._log,
                KeyConditionExpression="#owner = :owner AND entry_key BETWEEN :low AND :high",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": s(owner.key), ":low": s(low), ":high": s(high)},
                ScanIndexForward=False,
                ConsistentRead=True,
                **({"Limit": limit} if limit else {}),
            )
        else:
            items = self._partition(self._log, owner, ScanIndexForward=False, **({"Limit": limit} if limit else {}))
        return list(islice(readable_ledger(items), limit))

    def changes_of(self, owner: Owner, limit: int, *, older_than: str = "") -> list[LedgerEntry]:
        if limit <= 0:
            return []
        # The owner's partition, newest first, reads filtered out: a filter reads what it drops, so
        # a page costs the read rows between the changes too (reads expire: ledger retention).
        kinds = {f":{action.value}": s(action.value) for action in CHANGE_ACTIONS}
        before = {":older": s(older_than)} if older_than else {}
        items = query_items(
            self._client,
            TableName=self._log,
            KeyConditionExpression="#owner = :owner" + (" AND entry_key < :older" if older_than else ""),
            FilterExpression=f"#action IN ({', '.join(kinds)})",
            ExpressionAttributeNames={"#owner": "owner", "#action": "action"},
            ExpressionAttributeValues={":owner": s(owner.key), **kinds, **before},
            ScanIndexForward=False,
            ConsistentRead=True,
        )
        return list(islice(readable_ledger(items), limit))

    def ledger_entry(self, owner: Owner, key: str) -> LedgerEntry | None:
        item = get_item(self._client, self._log, {"owner": s(owner.key), "entry_key": s(key)})
        return next(readable_ledger([item]), None) if item else None

    def forgotten_sources(self, owner: Owner) -> frozenset[str]:
        # One consistent GetItem, whatever the length of the person's history.
        item = self._client.get_item(
            TableName=self._memories,
            Key=memory_key(owner, FORGOTTEN_KEY),
            ProjectionExpression="forgotten",
            ConsistentRead=True,
        ).get("Item")
        return frozenset(item["forgotten"]["SS"]) if item and "forgotten" in item else frozenset()

    def note_overnight(self, owner: Owner, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        self._client.update_item(
            TableName=self._memories,
            Key=memory_key(owner, OVERNIGHT_KEY),
            UpdateExpression="ADD changed :ids SET #scope = :scope, user_id = :user",
            ExpressionAttributeNames={"#scope": "scope"},
            ExpressionAttributeValues={
                ":ids": {"SS": sorted(set(memory_ids))},
                ":scope": s(owner.scope),
                ":user": s(owner.user_id),
            },
        )

    def overnight(self, owner: Owner) -> frozenset[str]:
        # Eventually consistent: a note written hours ago; one small item (0.5 read units).
        item = self._client.get_item(
            TableName=self._memories, Key=memory_key(owner, OVERNIGHT_KEY), ProjectionExpression="changed"
        ).get("Item")
        return frozenset(item["changed"]["SS"]) if item and "changed" in item else frozenset()

    def clear_overnight(self, owner: Owner, seen: frozenset[str] | None = None) -> bool:
        condition: dict[str, Any] = {"ConditionExpression": "attribute_exists(changed)"}
        if seen:  # only the note as read: ids a later step added are told next time
            condition = {
                "ConditionExpression": "changed = :seen",
                "ExpressionAttributeValues": {":seen": {"SS": sorted(seen)}},
            }
        return conditional_write(
            self._client.delete_item, TableName=self._memories, Key=memory_key(owner, OVERNIGHT_KEY), **condition
        )

    def erase_kept_beside(self, owner: Owner) -> None:
        self._client.delete_item(TableName=self._memories, Key=memory_key(owner, FORGOTTEN_KEY))
        self._cache.evict(owner.key)
        for key in profile_index.keys_of(owner, self._index(owner, None)):  # the selection index
            self._client.delete_item(TableName=self._memories, Key=key)

    def erase_unreadable(self, owner: Owner, *, actor: Actor, reason: str) -> tuple[int, int]:
        memories = rows = 0
        partition = (i for i in self._partition(self._memories, owner) if not _is_marker(i))
        for item in _unreadable(partition, memory_from_item):
            self._delete_unreadable(owner, str_of(item, "memory_id"), actor=actor, reason=reason)
            memories += 1
        for item in _unreadable(self._partition(self._log, owner), ledger_from_item):
            self._redact_key(item["owner"]["S"], item["entry_key"]["S"])
            rows += 1
        return memories, rows

    def _partition(self, table: str, owner: Owner, **request: Any) -> Iterator[Item]:
        """Every item of the owner's partition of ``table`` (memories or memory_log), read consistently."""
        return query_items(
            self._client,
            TableName=table,
            KeyConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner", **request.pop("ExpressionAttributeNames", {})},
            ExpressionAttributeValues={":owner": s(owner.key)},
            ConsistentRead=True,
            **request,
        )

    def _delete_unreadable(self, owner: Owner, memory_id: str, *, actor: Actor, reason: str) -> None:
        """Whatever the record holds, it goes, with its ledger row (ids only) in the same transaction."""
        entry = LedgerEntry(
            owner.user_id, Action.DELETE, actor, reason, self._clock(), (memory_id,), scope=owner.scope, redacted=True
        )
        transact_or_find_committed(
            self._client,
            [
                {"Delete": {"TableName": self._memories, "Key": memory_key(owner, memory_id)}},
                {
                    "Put": {
                        "TableName": self._log,
                        "Item": ledger_item(entry),
                        "ConditionExpression": "attribute_not_exists(entry_key)",
                    }
                },
                *profile_index.writes(self._memories, owner, memory_id, None),
            ],
            refused=lambda _error: False,
            committed=lambda: self._committed(entry),
        )

    def owners_of(self, user_id: str) -> list[Owner]:
        owners: dict[str, Owner] = {}
        for table, index in ((self._memories, MEMORIES_BY_USER), (self._log, LEDGER_BY_USER)):
            items = query_items(
                self._client,
                TableName=table,
                IndexName=index,
                KeyConditionExpression="user_id = :user",
                ProjectionExpression="#scope, user_id",
                ExpressionAttributeNames={"#scope": "scope"},
                ExpressionAttributeValues={":user": s(user_id)},
            )
            for item in items:
                owner = Owner(item["scope"]["S"], item["user_id"]["S"])
                owners.setdefault(owner.key, owner)
        return sorted(owners.values(), key=lambda o: o.key)

    def record(self, entry: LedgerEntry) -> None:
        self._client.put_item(
            TableName=self._log,
            Item=ledger_item(entry, read_retention_days=self._read_retention_days),
            ConditionExpression="attribute_not_exists(entry_key)",
        )

    def redact(self, entry: LedgerEntry) -> None:
        self._redact_key(entry.owner.key, ledger_entry_key(entry))

    def _redact_key(self, owner_key: str, entry_key: str) -> None:
        # Only before/after go, and a flag says so; the condition keeps it from creating a row.
        self._client.update_item(
            TableName=self._log,
            Key={"owner": s(owner_key), "entry_key": s(entry_key)},
            UpdateExpression="REMOVE #before, #after SET #redacted = :true",
            ConditionExpression="attribute_exists(entry_key)",
            ExpressionAttributeNames={"#before": "before", "#after": "after", "#redacted": "redacted"},
            ExpressionAttributeValues={":true": flag(True)},
            ReturnValues="NONE",
        )


def _unchanged(memory: Memory, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """The condition that the record is still exactly ``memory`` as read (its text and times), with
    ``values`` of the write's own beside it."""
    return {
        "ConditionExpression": "#text = :text AND updated_at = :updated AND created_at = :created",
        "ExpressionAttributeNames": {"#text": "text"},
        "ExpressionAttributeValues": {
            **(values or {}),
            ":text": s(memory.text),
            ":updated": s(iso(memory.updated_at)),
            ":created": s(iso(memory.created_at)),
        },
    }


def _conflicted(error: ClientError) -> bool:
    """Another transaction held one of the items (the memory, or the owner's selection index that
    every change of their memories writes): nothing committed, and a retry may."""
    if error_code(error) != TRANSACTION_CANCELED:
        return False
    reasons = error.response.get("CancellationReasons") or []
    return any(reason.get("Code") == REASON_CONFLICT for reason in reasons)


def _change_refused(error: ClientError, check_at: int | None) -> bool:
    """The memory's own write was turned down: the record changed since read, or another
    transaction holds it or its index; or the person's record (at ``check_at``) refused it. Then
    nothing committed, so there is nothing to look for."""
    return (
        cancellation_code(error, 0) == REASON_CONDITION_FAILED
        or _conflicted(error)
        or (check_at is not None and cancellation_code(error, check_at) == REASON_CONDITION_FAILED)
    )


def _add_once_refused(error: ClientError) -> bool:
    """The memory's or the marker's write was turned down: nothing committed."""
    return _conflicted(error) or any(cancellation_code(error, i) == REASON_CONDITION_FAILED for i in (0, 1))


def _review_order(memory: Memory) -> tuple[datetime, str, str]:
    return (memory.review_after, memory.owner.key, memory.memory_id)
