"""Fault injection for the stress tests: fail chosen DynamoDB requests or model calls.

DynamoDB faults go through botocore's own event hooks on a real client talking to
moto (its server, or ``InProcessDynamo``), so the adapter code under test is exactly the
deployed code.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from memorybot.adapters import profile_index
from memorybot.adapters.dynamodb_ledger import ledger_from_item
from memorybot.adapters.dynamodb_memories import FORGOTTEN_KEY, MARKER_PREFIX, memory_from_item
from memorybot.config import Settings
from memorybot.core.record.changes import LedgerEntry
from memorybot.core.record.domain import Action, Memory, Owner
from memorybot.core.record.ports import ModelError
from memorybot.local import moto_dynamo, moto_store

_prefixes = itertools.count(1)


class InjectedFault(Exception):
    """Stands for any DynamoDB failure: a throttle, a timeout, a 500."""


class RequestFaults:
    """Counts a client's DynamoDB requests and fails the ones whose number is in ``fail_at``."""

    def __init__(self, client: Any) -> None:
        self.count = 0
        self.fail_at: set[int] = set()
        self.operations: list[str] = []
        self.tables: list[str] = []  # each request's TableName ("" for a transaction's)
        self.bodies: list[dict] = []  # each request's parameters, as sent
        self._lock = threading.Lock()
        client.meta.events.register("before-call.dynamodb", self._before_call)

    def _before_call(self, model, params, **_: Any) -> None:
        body = json.loads(params.get("body") or b"{}")
        with self._lock:
            self.count += 1
            self.operations.append(model.name)
            self.tables.append(body.get("TableName", ""))
            self.bodies.append(body)
            failing = self.count in self.fail_at
        if failing:
            raise InjectedFault(f"request {self.count} ({model.name})")

    def reset(self, fail_at: set[int] | None = None) -> None:
        with self._lock:
            self.count = 0
            self.operations = []
            self.tables = []
            self.bodies = []
            self.fail_at = set(fail_at or ())


class LostAnswers:
    """Counts a client's DynamoDB requests and loses the answers of the ones whose number is
    in ``fail_at``: the request reaches the table and takes effect, then the caller gets an
    error (a timeout after the commit, or a worker that dies before it reads the answer)."""

    WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})

    def __init__(self, client: Any) -> None:
        self.count = 0
        self.fail_at: set[int] = set()
        self.operations: list[str] = []
        self._lock = threading.Lock()
        client.meta.events.register("after-call.dynamodb", self._after_call)

    def _after_call(self, model, **_: Any) -> None:
        with self._lock:
            self.count += 1
            self.operations.append(model.name)
            failing = self.count in self.fail_at
        if failing:
            raise InjectedFault(f"answer to request {self.count} ({model.name}) lost")

    def reset(self, fail_at: set[int] | None = None) -> None:
        with self._lock:
            self.count = 0
            self.operations = []
            self.fail_at = set(fail_at or ())

    def writes(self) -> list[int]:
        """The numbers of the write requests seen since the last reset."""
        return [n for n, name in enumerate(self.operations, start=1) if name in self.WRITES]


class CallFaults:
    """Numbers every call made to the models it wraps (one numbering across all of them);
    the calls whose number is in ``fail_at`` raise ModelError instead of answering."""

    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.count = 0
        self.fail_at = set(fail_at or ())
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def wrap(self, model: Any) -> Any:
        faults = self

        class Faulty:
            def __getattr__(self, name: str) -> Any:
                target = getattr(model, name)

                def call(*args: Any, **kwargs: Any) -> Any:
                    with faults._lock:
                        faults.count += 1
                        failing = faults.count in faults.fail_at
                        if failing:
                            faults.failed.append((name, args))
                    if failing:
                        raise ModelError(f"injected failure of call {faults.count} ({name})")
                    return target(*args, **kwargs)

                return call

        return Faulty()


class InProcessDynamo:
    """moto's DynamoDB in this process without the loopback hop: each client hands its requests to
    moto's own DynamoDB handler at botocore's ``before-send``, behind the local store's layer
    (moto_store), where the session's server would receive them over HTTP. Everything before and
    after the wire is the same: the request built, signed and sent through botocore's events (the
    fault hooks on ``before-call`` and ``after-call`` see exactly what they see with the server), the
    answer parsed and retried by botocore, the tables moto's. For the fault-injection modules, which
    rebuild their world and rerun it at every request position (tens of thousands of requests):
    half the CPU time a request costs over HTTP, the server's and the client's sides being one
    process's."""

    # Never resolved (RFC 6761): a client without the hand-off fails at once instead of going out.
    ENDPOINT = "http://dynamodb.in-process.invalid"

    def __init__(self) -> None:
        moto_store.install()

    def client(self) -> Any:
        import boto3

        client = boto3.client(
            "dynamodb",
            endpoint_url=self.ENDPOINT,
            region_name=moto_dynamo.LOCAL_REGION,
            **moto_dynamo.LOCAL_CREDENTIALS,
        )
        client.meta.events.register("before-send.dynamodb", _answered_by_moto)
        return client


def _answered_by_moto(request: Any, **_: Any) -> Any:
    """botocore's before-send: the answer of moto's DynamoDB handler, as the server would send it."""
    from botocore.awsrequest import AWSResponse
    from moto.core.botocore_stubber import MockRawResponse
    from moto.core.request import normalize_request
    from moto.dynamodb.responses import DynamoHandler

    received = normalize_request(request)
    status, headers, body = DynamoHandler.dispatch(received, received.raw_url, received.headers)
    return AWSResponse(request.url, status, headers, MockRawResponse(body))


def fresh_tables(moto_server) -> tuple[Any, Settings]:
    """A client and Settings over brand-new tables (for loops and hypothesis examples)."""
    client = moto_server.client()
    prefix = f"f{next(_prefixes)}-"
    moto_dynamo.create_tables(client, prefix)
    return client, Settings.from_env({"MEMORYBOT_TABLE_PREFIX": prefix})


_UNHOOKED: dict[str, Any] = {}  # one per endpoint: a client costs ~10 ms to make, and loops take hundreds of snapshots


def _unhooked(client: Any) -> Any:
    """A second client on the same endpoint, so that snapshots are never counted or failed."""
    import boto3

    endpoint = client.meta.endpoint_url
    if endpoint not in _UNHOOKED:
        if endpoint == InProcessDynamo.ENDPOINT:
            _UNHOOKED[endpoint] = InProcessDynamo().client()
        else:
            _UNHOOKED[endpoint] = boto3.client(
                "dynamodb",
                endpoint_url=endpoint,
                region_name=moto_dynamo.LOCAL_REGION,
                **moto_dynamo.LOCAL_CREDENTIALS,
            )
    return _UNHOOKED[endpoint]


def put_items(client: Any, table: str, items: list[dict]) -> None:
    """``items`` written as they are, 25 a BatchWriteItem, unprocessed ones sent again (seeding:
    no store, no ledger row, no fault hook counts them when ``client`` is unhooked or not yet hooked)."""
    for start in range(0, len(items), 25):
        batch = {table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]}
        while batch:
            batch = client.batch_write_item(RequestItems=batch)["UnprocessedItems"]


def tables_items(client: Any, settings: Settings) -> dict[str, list[dict]]:
    """Every item of every table, by the table's name without its prefix."""
    return {name: scan(client, table) for name, table in settings.table_names.items()}


def put_tables_items(client: Any, settings: Settings, items: dict[str, list[dict]]) -> None:
    """``tables_items``' items into the tables of ``settings`` (another world's copy of one)."""
    for name, held in items.items():
        put_items(client, settings.table_names[name], held)


def scan(client: Any, table: str) -> list[dict]:
    items, kwargs = [], {"TableName": table}
    while True:
        page = client.scan(**kwargs)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@dataclass
class Snapshot:
    """Everything in the memories and memory_log tables, read without any fault hook."""

    memories: dict[tuple[Owner, str], Memory] = field(default_factory=dict)  # (owner, memory id)
    ledger: list[LedgerEntry] = field(default_factory=list)

    @classmethod
    def take(cls, client: Any, settings: Settings) -> Snapshot:
        client = _unhooked(client)
        memories = {}
        headers: dict[str, dict] = {}
        chunks: dict[str, list[dict]] = {}
        for item in scan(client, settings.table_names["memories"]):
            key = item["memory_id"]["S"]
            if profile_index.is_header(item):
                headers[item["owner"]["S"]] = item
            elif key.startswith(profile_index.CHUNK_PREFIX):
                chunks.setdefault(item["owner"]["S"], []).append(item)
            elif key.startswith(MARKER_PREFIX) or key == FORGOTTEN_KEY:
                continue  # an import marker or the forgotten sources, not a memory
            else:
                m = memory_from_item(item)
                memories[(m.owner, m.memory_id)] = m
        ledger = [ledger_from_item(i) for i in scan(client, settings.table_names["memory_log"])]
        _assert_index_agrees(memories, headers, chunks)
        return cls(memories, ledger)

    def changes(self) -> list[LedgerEntry]:
        """Rows of memory changes (not reads, not a rollback's own run-level row)."""
        return [e for e in self.ledger if e.action is not Action.READ and e.memory_ids]


def ranked_view(m: Memory) -> tuple:
    """What the selection index holds of a memory: all of it but its sources and review mark."""
    return (m.memory_id, m.text, m.created_at, m.updated_at, m.valid_until, m.embedding)


def _assert_index_agrees(
    memories: dict[tuple[Owner, str], Memory], headers: dict[str, dict], chunks: dict[str, list[dict]]
) -> None:
    """Whatever failed, each owner's selection index holds exactly their memories as stored (every
    memory write writes its entry in the same transaction)."""
    owners = {o for o, _ in memories} | {Owner(*k.rsplit("#", 1)) for k in headers.keys() | chunks.keys()}
    for owner in owners:
        index = profile_index.Index(owner, headers.get(owner.key), chunks.get(owner.key, []))
        stored = sorted(ranked_view(m) for (o, _), m in memories.items() if o == owner)
        assert sorted(map(ranked_view, index.memories())) == stored, owner
        if index.complete and index.stamped:  # what a replica's chunk is checked by holds
            held = chunks.get(owner.key, [])
            assert sorted(i["memory_id"]["S"] for i in held) == profile_index.all_chunks(), owner
            for item in held:
                assert item[profile_index.GENERATION]["S"] == index.generation, owner
                count = int(item.get(profile_index.CHUNK_COUNT, {}).get("N", "0"))
                assert count == index.counts.get(item["memory_id"]["S"], 0), owner


def assert_every_change_has_exactly_one_ledger_row(before: Snapshot, after: Snapshot) -> None:
    """The memories table moved from ``before`` to ``after`` only by changes the ledger records,
    one row each, with the right before and after states; no partial change.

    For each record, its new ledger rows must form one unbroken chain from the old state to
    the new one (each row starting where the previous one ended), using every row once: so
    no change is missing a row, no row is missing its change, and no write was lost.
    """
    new_rows = [e for e in after.changes() if e not in before.changes()]
    by_record: dict[tuple[Owner, str], list[LedgerEntry]] = {}
    for entry in new_rows:
        [memory_id] = entry.memory_ids
        by_record.setdefault((entry.owner, memory_id), []).append(entry)
    for key in before.memories.keys() | after.memories.keys() | by_record.keys():
        rows = list(by_record.get(key, []))
        state = before.memories.get(key)
        while rows:
            following = [r for r in rows if r.before == state]
            assert len(following) == 1, f"ledger rows for {key} do not chain from the stored state"
            rows.remove(following[0])
            state = following[0].after
        assert state == after.memories.get(key), f"the ledger does not account for the change to {key}"
