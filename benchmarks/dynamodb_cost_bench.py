"""DynamoDB requests and capacity per /chat turn and per extraction, and what that costs.

Runs the real local stack in this process (moto on loopback, offline models), counts every
DynamoDB request the functions make with botocore's event hooks, and estimates on-demand
capacity from the request and response items with DynamoDB's published rules:
a write unit per 1 KB written (per table and per index the item is in, doubled inside a
transaction), a read unit per 4 KB read (strongly consistent; half for eventual; double
inside a transaction). moto reports no real capacity, so the estimate is ours.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path

WRITE_PRICE_PER_MILLION = 0.625  # USD, on-demand write request units, us-east-1
READ_PRICE_PER_MILLION = 0.125  # USD, on-demand read request units, us-east-1
TURNS = 12
SAYINGS = [
    "I love green tea and I play the cello",
    "what should I cook tonight?",
    "I'm moving to Osaka next month",
    "haha nice",
    "my sister Hana is visiting on Friday",
    "I no longer play the cello",
]


def attribute_size(value: dict) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "B"):
        return len(inner.encode() if isinstance(inner, str) else inner)
    if kind == "N":
        return math.ceil(len(str(inner).lstrip("-").replace(".", "")) / 2) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + attribute_size(v) for k, v in inner.items())
    return sum(len(str(v)) for v in inner)  # sets


def item_size(item: dict) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in (item or {}).items())


def indexes_holding(table: str, item: dict) -> int:
    """How many secondary indexes of ``table`` this item is written to (ALL projections)."""
    from memorybot import tables

    spec = next((s for s in tables.ALL_TABLES if table.endswith(s.logical_name)), None)
    if spec is None:
        return 0
    keys = [
        i
        for i in spec.local_indexes + spec.global_indexes
        if i.partition.name in item and (not i.sort or i.sort.name in item)
    ]
    return len(keys)


class Meter:
    def __init__(self, client) -> None:
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.wru = 0.0
        self.rru = 0.0
        client.meta.events.register("before-parameter-build.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    def _writes(self, table: str, item: dict, factor: int) -> float:
        units = max(1, math.ceil(item_size(item) / 1024))
        return factor * units * (1 + indexes_holding(table, item))

    def _before(self, model, params, context, **_) -> None:
        op = model.name
        context["strongly_consistent"] = bool(params.get("ConsistentRead"))
        with self.lock:
            self.requests[op] += 1
            if op == "PutItem":
                self.wru += self._writes(params["TableName"], params["Item"], 1)
            elif op in ("UpdateItem", "DeleteItem"):
                self.wru += 1 + indexes_holding(params["TableName"], params.get("Key", {}))
            elif op == "TransactWriteItems":
                for action in params["TransactItems"]:
                    ((kind, body),) = action.items()
                    self.wru += self._writes(body["TableName"], body.get("Item") or body.get("Key", {}), 2)

    def _after(self, model, parsed, context, **_) -> None:
        op = model.name
        items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
        if op in ("Query", "GetItem", "Scan"):
            units = max(1, math.ceil(sum(item_size(i) for i in items) / 4096))
            with self.lock:  # an eventually consistent read costs half
                self.rru += units if context.get("strongly_consistent") else units / 2

    def snapshot(self):
        with self.lock:
            return Counter(self.requests), self.wru, self.rru


def main() -> None:
    for name in [k for k in os.environ if k.startswith(("DISCORD_", "MEMORYBOT_", "AWS_ENDPOINT", "JEV_"))]:
        del os.environ[name]
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    from memorybot import bootstrap
    from memorybot.local import server
    from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key

    state = Path(tempfile.mkdtemp(prefix="memorybot-bench-"))
    stack = server.start(port=0, state_dir=state)
    try:
        container = bootstrap.container()
        meter = Meter(container.dynamodb_client)
        client = LocalClient(stack.url, "alice", find_signing_key(state), admin_secret=find_admin_secret(state))
        client.catch_up()
        rows = []
        discord = 0  # requests to Discord (the recorder's events): the reply, receipts, notices
        for i in range(TURNS):
            before, seen = meter.snapshot(), discord_events(client)
            client.chat(SAYINGS[i % len(SAYINGS)])  # returns after the reply and the extraction ran
            after = meter.snapshot()
            discord += discord_events(client) - seen
            rows.append((after[0] - before[0], after[1] - before[1], after[2] - before[2]))
        requests = sum((r[0] for r in rows), Counter())
        wru = sum(r[1] for r in rows) / TURNS
        rru = sum(r[2] for r in rows) / TURNS
        per_turn = sum(requests.values()) / TURNS
        print(f"{TURNS} /chat turns on the local stack (offline models; reply + extraction per turn)")
        print(
            f"DynamoDB requests per turn: {per_turn:.1f} ("
            + ", ".join(f"{op} {n / TURNS:.1f}" for op, n in requests.most_common())
            + ")"
        )
        print(f"estimated capacity per turn: {wru:.1f} write units, {rru:.1f} read units")
        cost = 1000 * (wru * WRITE_PRICE_PER_MILLION + rru * READ_PRICE_PER_MILLION) / 1e6
        print(f"DynamoDB cost per 1,000 conversations (on-demand, us-east-1 list prices): ${cost:.4f}")
        print(
            f"per turn, min/max requests: {min(sum(r[0].values()) for r in rows)} / {max(sum(r[0].values()) for r in rows)}"
        )
        print(f"Discord requests per turn: {discord / TURNS:.2f}")
        why_click(client, meter)
    finally:
        stack.stop()
    extraction_only()


def discord_events(client) -> int:
    """How many requests the bot has made to Discord so far (the local recorder's events)."""
    answer = client.http.get(f"{client.url}/local/discord/events", params={"after": 0}, headers=client._admin)
    return len(answer.json()["events"])


def why_click(client, meter) -> None:
    """What a click of the last reply's "Why?" costs (when the build has the button)."""
    buttons = [b["custom_id"] for b in client.buttons if b.get("custom_id", "").startswith("memory-because")]
    if not buttons:
        return
    before = meter.snapshot()
    client.click(buttons[-1])
    after = meter.snapshot()
    requests = after[0] - before[0]
    print(
        f'one "Why?" click: {sum(requests.values())} DynamoDB requests '
        f"({', '.join(f'{op} {n}' for op, n in requests.most_common())}), "
        f"~{after[1] - before[1]:.1f} write units, ~{after[2] - before[2]:.1f} read units"
    )


def extraction_only() -> None:
    """One extraction with ten memories, the worst case (every record updated, plus an add)."""
    from datetime import timedelta

    from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
    from memorybot.config import Settings
    from memorybot.core.record.changes import Change
    from memorybot.core.record.domain import GLOBAL_SCOPE, Action, Actor, Verdict
    from memorybot.core.turn.extraction import Extractor
    from memorybot.local import moto_dynamo
    from tests.fakes import T0, Clock, ScriptedChat, ScriptedJev, memory, message, speaker

    moto = moto_dynamo.start()
    try:
        client = moto.client()
        moto_dynamo.create_tables(client, "x-")
        store = DynamoMemoryStore(client, Settings.from_env({"MEMORYBOT_TABLE_PREFIX": "x-"}), clock=Clock())
        # Without an embedding model, and with the offline one at the deployed size (each written
        # text's vector is stored after its write: one conditioned UpdateItem a memory).
        cases = (("u1", "no embeddings", None), ("u2", "vectors, 256 dims", OfflineEmbeddingModel(256)))
        for user, label, embeddings in cases:
            for i, c in enumerate("abcdefghjk"):
                m = memory(
                    user,
                    f"m{c}222",
                    f"a fact of ordinary length about person one, number {i}",
                    at=T0 + timedelta(minutes=i),
                )
                store.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
            meter = Meter(client)
            jev = ScriptedJev(worth=0.9, add=0.9)
            jev.default_verdict = Verdict.UPDATE
            Extractor(store, jev, ScriptedChat(), clock=Clock(T0 + timedelta(days=1)), embeddings=embeddings).run(
                speaker(user, "alice"), GLOBAL_SCOPE, [message(user, "news", name="alice")]
            )
            requests, wru, rru = meter.snapshot()
            print(
                f"one extraction, ten memories, 10 updates + 1 add ({label}): {sum(requests.values())} requests "
                f"({', '.join(f'{op} {n}' for op, n in requests.most_common())}), ~{wru:.0f} write units, "
                f"~{rru:.0f} read units"
            )
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
