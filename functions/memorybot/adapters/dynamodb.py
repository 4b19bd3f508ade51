"""DynamoDB adapters: the memories with their ledger (memory_log), and the channel log.

Every change to a memory commits in ONE TransactWriteItems call together with its
ledger row, conditioned on the record being exactly as it was read: conditional
transactions do here what the design's ConversationDO did (serialise the writes).

Scoping: every key and key condition below is built from the Owner (scope and user)
the caller passed (or, for ``apply``, the owner of the Change), so no method can reach
another person's rows, or the same person's rows in another scope. ``stale`` is the one
cross-owner read, for the nightly review.

The typed attribute values, paging, conditional writes and the "did it commit after
all?" read-back come from ``dynamodb_items``; the memory and ledger (de)serialisers here
are public so the run store (a rollback's own ledger row) and the tests can reuse them.
"""

from __future__ import annotations

import heapq
import json
import secrets
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.domain import (
    DISCORD_EPOCH_MS,
    JST,
    Action,
    Actor,
    Basis,
    Change,
    Embedding,
    LedgerEntry,
    Memory,
    Message,
    Owner,
    PersonCheck,
    SourceRef,
    iso,
    jst_day,
    parse_iso,
    snowflake_time,
    utcnow,
)
from ..core.ports import ConflictError, PersonRefused
from . import vectors
from .dynamodb_items import (
    REASON_CONDITION_FAILED,
    REASON_CONFLICT,
    Item,
    bool_of,
    cancellation_code,
    conditional_write,
    flag,
    get_item,
    int_of,
    n,
    number_str,
    optional_str,
    optional_time,
    query_items,
    s,
    s_list,
    str_list_of,
    str_of,
    transact_or_find_committed,
)

CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 5
MAX_ATTEMPTS = 4  # "standard" retry mode: the first call and up to three retries, with jittered backoff
# Real DynamoDB cancels a transaction that races another one on the same item
# ("TransactionConflict"); the conditions are re-checked on each attempt, so retrying is safe.
TRANSACTION_CONFLICT_ATTEMPTS = 3
TRANSACTION_CONFLICT_BACKOFF_SECONDS = 0.05
# The owner's forgotten sources: one item in the memories table beside the owner's memories,
# under a sort key no memory id can take (ids are five lowercase letters and digits). It has no
# updated_at and no stale_shard, so no profile, review or stale index ever lists it; it has
# user_id and scope, so by_user finds it for export and erasure.
FORGOTTEN_KEY = "#forgotten"


def dynamodb_client() -> Any:
    """A low-level DynamoDB client with short timeouts and bounded retries.

    No endpoint argument: boto3 reads AWS_ENDPOINT_URL_DYNAMODB itself, which is how
    the local stack points every client at moto.
    """
    config = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
    )
    return boto3.client("dynamodb", config=config)


def _index(spec: tables.TableSpec, name: str) -> str:
    """An index name, checked against the table spec at import time."""
    if not any(i.name == name for i in spec.local_indexes + spec.global_indexes):
        raise LookupError(f"{spec.logical_name} has no index {name!r}")
    return name


BY_UPDATED = _index(tables.MEMORIES, "by_updated")
STALE = _index(tables.MEMORIES, "stale")
REVIEW_QUEUE = _index(tables.MEMORIES, "review_queue")
STALE_PAGE = 100  # items read per page of the review queue (a filter keeps only the stale ones)
BY_RUN = _index(tables.MEMORY_LOG, "by_run")
BY_JST_DAY = _index(tables.MESSAGES, "by_jst_day")
BY_CONVERSATION = _index(tables.MESSAGES, "by_conversation")
BY_AUTHOR = _index(tables.MESSAGES, "by_author")
BY_CONVERSATION_OF = _index(tables.MESSAGES, "by_conversation_of")
MEMORIES_BY_USER = _index(tables.MEMORIES, "by_user")
LEDGER_BY_USER = _index(tables.MEMORY_LOG, "by_user")


def _ttl_attribute(spec: tables.TableSpec) -> str:
    if not spec.ttl_attribute:
        raise LookupError(f"{spec.logical_name} has no TTL attribute")
    return spec.ttl_attribute


LEDGER_EXPIRY = _ttl_attribute(tables.MEMORY_LOG)  # only on read rows


# ---- memories -----------------------------------------------------------------


def stale_shard(owner: Owner) -> str:
    """The owner's shard of the ``stale`` index: a stable hash, the same in every process."""
    return str(zlib.crc32(owner.key.encode("utf-8")) % tables.STALE_SHARDS)


def memory_item(memory: Memory) -> Item:
    return {
        "owner": s(memory.owner.key),
        "scope": s(memory.scope),
        "user_id": s(memory.user_id),
        "memory_id": s(memory.memory_id),
        "text": s(memory.text),
        "created_at": s(iso(memory.created_at)),
        "updated_at": s(iso(memory.updated_at)),
        "stale_shard": s(stale_shard(memory.owner)),
        # A written memory (added, updated, restored) starts its place in the review queue afresh.
        "review_after": s(iso(memory.updated_at)),
        **_sources_attribute(memory.sources),
        **_embedding_attributes(memory.embedding),
    }


def _embedding_attributes(embedding: Embedding | None) -> Item:
    """The vector as compact bytes (adapters/vectors.py) with the model that made it; nothing without one."""
    if embedding is None:
        return {}
    return {"embedding": {"B": vectors.encode(embedding.vector)}, "embedding_model": s(embedding.model)}


def _embedding_from(item: Item) -> Embedding | None:
    if "embedding" not in item or "embedding_model" not in item:
        return None
    data = item["embedding"]["B"]
    return Embedding(item["embedding_model"]["S"], vectors.decode(bytes(data)))


def _sources_attribute(sources: tuple[SourceRef, ...]) -> Item:
    return {"sources": s_list(ref.encode() for ref in sources)} if sources else {}


def _sources_from(item: Item) -> tuple[SourceRef, ...]:
    return tuple(SourceRef.decode(text) for text in str_list_of(item, "sources"))


def memory_from_item(item: Item) -> Memory:
    return Memory(
        reviewed_at=optional_time(item, "reviewed_at"),
        user_id=item["user_id"]["S"],
        memory_id=item["memory_id"]["S"],
        text=item["text"]["S"],
        created_at=parse_iso(item["created_at"]["S"]),
        updated_at=parse_iso(item["updated_at"]["S"]),
        scope=item["scope"]["S"],
        sources=_sources_from(item),
        embedding=_embedding_from(item),
    )


def memory_key(owner: Owner, memory_id: str) -> Item:
    return {"owner": s(owner.key), "memory_id": s(memory_id)}


# An import marker (``add_once``) lives beside the owner's memories under this sort-key prefix:
# never a memory id (those are five characters of MEMORY_ID_ALPHABET), and with no index
# attribute (updated_at, user_id, stale_shard), so no profile read, export or review sees it.
MARKER_PREFIX = "once#"


def marker_key(owner: Owner, once: str) -> Item:
    return memory_key(owner, MARKER_PREFIX + once)


def memory_to_json(memory: Memory) -> str:
    """A memory as a JSON object, for the ledger's before / after state."""
    return json.dumps(
        {
            "scope": memory.scope,
            "user_id": memory.user_id,
            "memory_id": memory.memory_id,
            "text": memory.text,
            "created_at": iso(memory.created_at),
            "updated_at": iso(memory.updated_at),
            **({"sources": [ref.encode() for ref in memory.sources]} if memory.sources else {}),
        },
        ensure_ascii=False,
        sort_keys=True,
    )


def memory_from_json(text: str | None) -> Memory | None:
    if not text:
        return None
    data = json.loads(text)
    return Memory(
        data["user_id"],
        data["memory_id"],
        data["text"],
        parse_iso(data["created_at"]),
        parse_iso(data["updated_at"]),
        scope=data["scope"],
        sources=tuple(SourceRef.decode(t) for t in data.get("sources", [])),
    )


# ---- the person's check (the people table), in the transaction of every write of their data ----

FORGOT_ALL_PREFIX = "forgot_all_at:"


def forgot_all_attribute(scope: str) -> str:
    return f"{FORGOT_ALL_PREFIX}{scope}"


def person_key(user_id: str) -> Item:
    return {"user_id": s(user_id)}


def person_check_item(table: str, check: PersonCheck) -> Item:
    """The ConditionCheck of a transaction that writes the person's data: ``PersonCheck.allows``
    as a condition expression (an absent record allows everything)."""
    names = {"#erased": "erased_at"}
    parts = ["(attribute_not_exists(#erased) OR #erased < :since)"]
    if check.basis is Basis.LEARN:
        names |= {"#paused": "paused_at", "#resumed": "resumed_at"}
        parts += ["attribute_not_exists(#paused)", "(attribute_not_exists(#resumed) OR #resumed < :since)"]
    elif check.basis is Basis.RESTORE:
        names["#forgot"] = forgot_all_attribute(check.scope)
        parts.append("(attribute_not_exists(#forgot) OR #forgot < :since)")
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": person_key(check.user_id),
            "ConditionExpression": " AND ".join(parts),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":since": s(iso(check.since))},
        }
    }


# ---- the ledger (memory_log) ----------------------------------------------------


def ledger_entry_key(entry: LedgerEntry) -> str:
    """Sort key: the time first, so a user's rows (and a run's, in by_run) order by time."""
    return f"{iso(entry.at)}#{entry.entry_id}"


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
    item.update(_sources_attribute(entry.sources))
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
        sources=_sources_from(item),
        redacted=bool_of(item, "redacted"),
        import_id=optional_str(item, "import_id"),
    )


# What a Memory holds, for the whole-profile read (selection) and the backfill's scan.
_PROFILE_NAMES = {
    "#u": "user_id",
    "#s": "scope",
    "#m": "memory_id",
    "#t": "text",
    "#c": "created_at",
    "#up": "updated_at",
    "#r": "reviewed_at",
    "#src": "sources",
    "#e": "embedding",
    "#em": "embedding_model",
}
_PROFILE_PROJECTION = ", ".join(_PROFILE_NAMES)
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


class DynamoMemoryStore:
    """``ports.MemoryStore`` on the memories and memory_log tables."""

    def __init__(self, client: Any, settings: Settings, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._client = client
        self._memories = settings.table(tables.MEMORIES)
        self._log = settings.table(tables.MEMORY_LOG)
        self._people = settings.table(tables.PEOPLE)
        self._read_retention_days = settings.ledger_read_retention_days
        self._clock = clock

    # -- reads of one person's profile

    def read_profile(
        self,
        owner: Owner,
        *,
        actor: Actor,
        reason: str,
        limit: int,
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
            profile = [memory_from_item(i) for i in islice(items, limit)]
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
    ) -> list[Memory]:
        # One Query of the owner's own partition (the base table: no index to keep in step),
        # projecting what a Memory holds and not the index bookkeeping (stale_shard, review_after).
        items = query_items(
            self._client,
            TableName=self._memories,
            KeyConditionExpression="#owner = :owner",
            ProjectionExpression=_PROFILE_PROJECTION,
            ExpressionAttributeNames={"#owner": "owner", **_PROFILE_NAMES},
            ExpressionAttributeValues={":owner": s(owner.key)},
            ConsistentRead=True,
        )
        memories = [memory_from_item(i) for i in items if not _is_marker(i)]
        if unused_if is not None and unused_if():
            return []  # read, never used: no row
        chosen = choose(memories)
        self.log_read(owner, tuple(m.memory_id for m in chosen), actor=actor, reason=reason, run_id=run_id)
        return chosen

    def set_embedding(self, memory: Memory, embedding: Embedding) -> bool:
        # Derived from the text, like a review mark: no ledger row. Only onto the record as read.
        return conditional_write(
            self._client.update_item,
            TableName=self._memories,
            Key=memory_key(memory.owner, memory.memory_id),
            UpdateExpression="SET embedding = :vector, embedding_model = :model",
            ConditionExpression="#text = :text AND updated_at = :updated AND created_at = :created",
            ExpressionAttributeNames={"#text": "text"},
            ExpressionAttributeValues={
                ":vector": {"B": vectors.encode(embedding.vector)},
                ":model": s(embedding.model),
                ":text": s(memory.text),
                ":updated": s(iso(memory.updated_at)),
                ":created": s(iso(memory.created_at)),
            },
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
            for item in page.get("Items", []):
                if _is_marker(item):
                    continue
                found.append(memory_from_item(item))
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
        self, owner: Owner, memory_ids: tuple[str, ...], *, actor: Actor, reason: str, run_id: int | None = None
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
        self._client.put_item(
            TableName=self._log,
            Item=ledger_item(entry, read_retention_days=self._read_retention_days),
            ConditionExpression="attribute_not_exists(entry_key)",
        )

    def get(self, owner: Owner, memory_id: str) -> Memory | None:
        item = get_item(self._client, self._memories, memory_key(owner, memory_id))
        return memory_from_item(item) if item else None

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
            scope=change.owner.scope,
            sources=(change.after or change.before).sources,  # type: ignore[union-attr]
            redacted=redacted,
        )
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
        if entry.action is Action.DELETE and entry.actor is Actor.COMMAND and entry.sources:
            # A forget by the person: its sources never teach again, recorded with the delete.
            transaction.append(self._forgotten_write(change.owner, entry.sources))
        check_at = len(transaction) if check is not None else None
        if check is not None:  # after the memory's own write (position 0) and its ledger row
            transaction.append(person_check_item(self._people, check))
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
                if code == REASON_CONFLICT:
                    if attempt < TRANSACTION_CONFLICT_ATTEMPTS:
                        time.sleep(TRANSACTION_CONFLICT_BACKOFF_SECONDS * attempt)
                        continue
                    # Still contended: someone else keeps changing the record; drop ours.
                    raise ConflictError(change.memory_id) from error
                raise
        raise AssertionError("unreachable")

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
                    "Item": memory_item(change.after),  # type: ignore[arg-type]  # Change guarantees one side
                    "ConditionExpression": "attribute_not_exists(memory_id)",
                }
            }
        before = change.before
        unchanged = {
            "ConditionExpression": "#text = :text AND updated_at = :updated AND created_at = :created",
            "ExpressionAttributeNames": {"#text": "text"},
            "ExpressionAttributeValues": {
                ":text": s(before.text),
                ":updated": s(iso(before.updated_at)),
                ":created": s(iso(before.created_at)),
            },
        }
        if change.after is None:
            return {
                "Delete": {
                    "TableName": self._memories,
                    "Key": memory_key(before.owner, before.memory_id),
                    **unchanged,
                }
            }
        return {"Put": {"TableName": self._memories, "Item": memory_item(change.after), **unchanged}}

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
            {"Put": {"TableName": self._memories, "Item": memory_item(memory), "ConditionExpression": absent}},
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
        if check is not None:  # last: the memory, the marker and the row keep their positions
            transaction.append(person_check_item(self._people, check))
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
                if REASON_CONFLICT in (cancellation_code(error, 0), cancellation_code(error, 1)):
                    # A concurrent call holds the marker: once it commits, the retry finds it.
                    if attempt < TRANSACTION_CONFLICT_ATTEMPTS:
                        time.sleep(TRANSACTION_CONFLICT_BACKOFF_SECONDS * attempt)
                        continue
                    raise ConflictError(memory.memory_id) from error
                raise
        raise AssertionError("unreachable")

    def has_marker(self, owner: Owner, once: str) -> bool:
        return get_item(self._client, self._memories, marker_key(owner, once)) is not None

    # -- the nightly review (every user)

    def stale(self, updated_before: datetime, limit: int) -> list[Memory]:
        if limit <= 0:
            return []
        cutoff = iso(updated_before)
        queues: list[list[Memory]] = []
        for shard in range(tables.STALE_SHARDS):
            # The review queue, least recently reviewed first; only the stale ones count.
            queued = query_items(
                self._client,
                TableName=self._memories,
                IndexName=REVIEW_QUEUE,
                KeyConditionExpression="stale_shard = :shard",
                FilterExpression="updated_at < :cutoff",
                ExpressionAttributeValues={":shard": s(str(shard)), ":cutoff": s(cutoff)},
                ScanIndexForward=True,
                Limit=STALE_PAGE,
            )
            # Records written before review_after existed are not in that index: they are found
            # by their update time (their place in the queue), until a write or a review marks them.
            unqueued = query_items(
                self._client,
                TableName=self._memories,
                IndexName=STALE,
                KeyConditionExpression="stale_shard = :shard AND updated_at < :cutoff",
                FilterExpression="attribute_not_exists(review_after)",
                ExpressionAttributeValues={":shard": s(str(shard)), ":cutoff": s(cutoff)},
                ScanIndexForward=True,
                Limit=STALE_PAGE,
            )
            # No shard can contribute more than ``limit`` to the first ``limit`` overall.
            for items in (queued, unqueued):
                queues.append(sorted((memory_from_item(i) for i in islice(items, limit)), key=_review_order))
        return list(islice(heapq.merge(*queues, key=_review_order), limit))

    def mark_reviewed(self, memory: Memory, at: datetime) -> None:
        # A failed condition means changed or deleted meanwhile: its own write placed it in the queue.
        conditional_write(
            self._client.update_item,
            TableName=self._memories,
            Key=memory_key(memory.owner, memory.memory_id),
            UpdateExpression="SET reviewed_at = :at, review_after = :at",
            ConditionExpression="#text = :text AND updated_at = :updated AND created_at = :created",
            ExpressionAttributeNames={"#text": "text"},
            ExpressionAttributeValues={
                ":at": s(iso(at)),
                ":text": s(memory.text),
                ":updated": s(iso(memory.updated_at)),
                ":created": s(iso(memory.created_at)),
            },
        )

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
        return [ledger_from_item(i) for i in items]

    def ledger_for(self, owner: Owner, limit: int | None = 100) -> list[LedgerEntry]:
        if limit is not None and limit <= 0:
            return []
        items = query_items(
            self._client,
            TableName=self._log,
            KeyConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": s(owner.key)},
            ScanIndexForward=False,
            ConsistentRead=True,
            **({"Limit": limit} if limit else {}),
        )
        return [ledger_from_item(i) for i in islice(items, limit)]

    def forgotten_sources(self, owner: Owner) -> frozenset[str]:
        # One consistent GetItem, whatever the length of the person's history.
        item = self._client.get_item(
            TableName=self._memories,
            Key=memory_key(owner, FORGOTTEN_KEY),
            ProjectionExpression="forgotten",
            ConsistentRead=True,
        ).get("Item")
        return frozenset(item["forgotten"]["SS"]) if item and "forgotten" in item else frozenset()

    def erase_forgotten_sources(self, owner: Owner) -> None:
        self._client.delete_item(TableName=self._memories, Key=memory_key(owner, FORGOTTEN_KEY))

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
        # Only before/after go, and a flag says so; the condition keeps it from creating a row.
        self._client.update_item(
            TableName=self._log,
            Key={"owner": s(entry.owner.key), "entry_key": s(ledger_entry_key(entry))},
            UpdateExpression="REMOVE #before, #after SET #redacted = :true",
            ConditionExpression="attribute_exists(entry_key)",
            ExpressionAttributeNames={"#before": "before", "#after": "after", "#redacted": "redacted"},
            ExpressionAttributeValues={":true": flag(True)},
            ReturnValues="NONE",
        )


def _change_refused(error: ClientError, check_at: int | None) -> bool:
    """The memory's own write was turned down: the record changed since read, or another
    transaction holds it; or the person's record (at ``check_at``) refused it. Then nothing
    committed, so there is nothing to look for."""
    return cancellation_code(error, 0) in (REASON_CONDITION_FAILED, REASON_CONFLICT) or (
        check_at is not None and cancellation_code(error, check_at) == REASON_CONDITION_FAILED
    )


def _add_once_refused(error: ClientError) -> bool:
    """The memory's or the marker's write was turned down: nothing committed."""
    return any(cancellation_code(error, i) in (REASON_CONDITION_FAILED, REASON_CONFLICT) for i in (0, 1))


def _review_order(memory: Memory) -> tuple[datetime, str, str]:
    return (memory.review_after, memory.owner.key, memory.memory_id)


# ---- messages -----------------------------------------------------------------


def conversation_key(channel_id: str, user_id: str) -> str:
    return f"{channel_id}#{user_id}"


def message_key(message: Message) -> Item:
    return {"channel_id": s(message.channel_id), "message_id": n(message.message_id)}


def message_item(message: Message) -> Item:
    item: Item = {
        **message_key(message),
        "jst_day": s(jst_day(message.created_at)),
        "author_id": s(message.author_id),
        "author_name": s(message.author_name),
        "content": s(message.content),
        "is_bot": flag(message.is_bot),
        "scope": s(message.scope),
    }
    if message.conversation_of:  # only then: by_conversation stays sparse
        item["conversation_of"] = s(message.conversation_of)
        item["conversation"] = s(conversation_key(message.channel_id, message.conversation_of))
    return item


def message_from_item(item: Item) -> Message:
    return Message(
        channel_id=item["channel_id"]["S"],
        message_id=number_str(item["message_id"]),
        author_id=item["author_id"]["S"],
        author_name=str_of(item, "author_name"),
        content=str_of(item, "content"),
        is_bot=bool_of(item, "is_bot"),
        scope=item["scope"]["S"],
        conversation_of=str_of(item, "conversation_of"),
    )


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _first_snowflake_at_or_after(at: datetime) -> int:
    """The smallest snowflake whose time is >= ``at``.

    Snowflakes carry whole milliseconds, so ``at`` is rounded up, with exact integer
    arithmetic (a float timestamp could land one millisecond off).
    """
    ms = -((_UNIX_EPOCH - at) // _MS)  # ceiling division
    return max(ms - DISCORD_EPOCH_MS, 0) << 22


def _jst_days(first: date, last: date) -> Iterator[str]:
    day = first
    while day <= last:
        yield day.isoformat()
        day += timedelta(days=1)


class DynamoMessageStore:
    """``ports.MessageStore`` on the messages table."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._table = settings.table(tables.MESSAGES)
        self._people = settings.table(tables.PEOPLE)

    def put(self, message: Message, *, check: PersonCheck | None = None) -> bool:
        # A failed condition means already stored (a redelivered event or a replayed /chat): the
        # first copy stands, and that is success. The write carries a token of this call, so that
        # botocore's retry of a put whose answer was lost finds its own copy and still says "stored".
        token = secrets.token_hex(8)
        put = {
            "TableName": self._table,
            "Item": {**message_item(message), "stored_by": s(token)},
            "ConditionExpression": "attribute_not_exists(message_id) OR stored_by = :mine",
            "ExpressionAttributeValues": {":mine": s(token)},
        }
        if check is None:
            return conditional_write(self._client.put_item, **put)
        try:
            # With the person's check in the same transaction (its own token covers a retry).
            transact_or_find_committed(
                self._client,
                [{"Put": put}, person_check_item(self._people, check)],
                refused=lambda error: any(cancellation_code(error, i) == REASON_CONDITION_FAILED for i in (0, 1)),
                committed=lambda: (
                    (get_item(self._client, self._table, message_key(message)) or {}).get("stored_by") == s(token)
                ),
            )
        except ClientError as error:
            if cancellation_code(error, 1) == REASON_CONDITION_FAILED:
                raise PersonRefused(message.message_id) from error  # erased since the job began
            if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                return False
            raise
        return True

    def of_person(self, user_id: str) -> list[Message]:
        own = self._by_person(BY_AUTHOR, "author_id", user_id)
        # The bot's replies by the person they answer, not through the channels of the person's
        # own lines: a reply stored after those lines were erased is still found.
        conversations = [m for m in self._by_person(BY_CONVERSATION_OF, "conversation_of", user_id) if m.is_bot]
        return sorted(
            {(m.channel_id, m.message_id): m for m in own + conversations}.values(), key=lambda m: int(m.message_id)
        )

    def _by_person(self, index: str, attribute: str, user_id: str) -> list[Message]:
        items = query_items(
            self._client,
            TableName=self._table,
            IndexName=index,
            KeyConditionExpression=f"{attribute} = :user",
            ExpressionAttributeValues={":user": s(user_id)},
        )
        # The index is shared by key only: check the person again, so no other line slips in.
        return [m for m in map(message_from_item, items) if getattr(m, attribute) == user_id]

    def delete(self, message: Message) -> None:
        self._client.delete_item(TableName=self._table, Key=message_key(message))

    def recent(self, channel_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        return self._newest({"channel_id": channel_id}, limit, up_to=up_to, index=None)

    def conversation(self, channel_id: str, user_id: str, limit: int, *, up_to: str | None = None) -> list[Message]:
        found = self._newest(
            {"conversation": conversation_key(channel_id, user_id)}, limit, up_to=up_to, index=BY_CONVERSATION
        )
        # The index is shared by key only: check the owner again, so no other line slips in.
        return [m for m in found if m.conversation_of == user_id and m.channel_id == channel_id]

    def _newest(self, key: dict[str, str], limit: int, *, up_to: str | None, index: str | None) -> list[Message]:
        """The newest ``limit`` messages under one partition key (of the table or an index), oldest first."""
        if limit <= 0:
            return []
        [(name, value)] = key.items()
        condition, values = f"{name} = :key", {":key": s(value)}
        if up_to is not None:
            condition, values = condition + " AND message_id <= :up_to", {**values, ":up_to": n(up_to)}
        # A global index cannot be read consistently; the table can.
        where = {"IndexName": index} if index else {"ConsistentRead": True}
        items = query_items(
            self._client,
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            Limit=limit,
            **where,
        )
        newest_first = [message_from_item(i) for i in islice(items, limit)]
        return newest_first[::-1]

    def of_conversation(self, user_id: str, refs: Sequence[tuple[str, str]]) -> list[Message]:
        wanted: dict[str, set[int]] = {}
        for channel_id, message_id in refs:
            wanted.setdefault(channel_id, set()).add(int(message_id))
        found = [
            m
            for channel_id, ids in wanted.items()
            for m in self._conversation_lines(channel_id, user_id, between=(min(ids), max(ids)))
            if int(m.message_id) in ids
        ]
        return sorted(found, key=lambda m: int(m.message_id))

    def _conversation_lines(
        self, channel_id: str, user_id: str, *, between: tuple[int, int] | None = None
    ) -> Iterator[Message]:
        """The lines of the person's own conversation with the bot in one channel (by_conversation),
        with message ids in ``between`` (inclusive) if given, in id order."""
        condition, values = "conversation = :key", {":key": s(conversation_key(channel_id, user_id))}
        if between is not None:
            condition += " AND message_id BETWEEN :low AND :high"
            values |= {":low": n(between[0]), ":high": n(between[1])}
        items = query_items(
            self._client,
            TableName=self._table,
            IndexName=BY_CONVERSATION,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ScanIndexForward=True,
        )
        # The index is shared by key only: check the owner again, so no other line slips in.
        return (m for m in map(message_from_item, items) if m.conversation_of == user_id)

    def between(self, start: datetime, end: datetime) -> list[Message]:
        low = _first_snowflake_at_or_after(start)
        high = _first_snowflake_at_or_after(end) - 1  # end is exclusive
        if high < low:
            return []
        found: list[Message] = []
        first_day = snowflake_time(low).astimezone(JST).date()
        last_day = snowflake_time(high).astimezone(JST).date()
        for day in _jst_days(first_day, last_day):
            items = query_items(
                self._client,
                TableName=self._table,
                IndexName=BY_JST_DAY,
                KeyConditionExpression="jst_day = :day AND message_id BETWEEN :low AND :high",
                ExpressionAttributeValues={":day": s(day), ":low": n(low), ":high": n(high)},
                ScanIndexForward=True,
            )
            found.extend(message_from_item(i) for i in items)
        return sorted(found, key=lambda m: int(m.message_id))
