"""What relevance selection costs per turn: DynamoDB reads and the reply path's added latency.

For a person with 10 / 100 / 500 / 2,000 memories, against DynamoDB (moto on loopback) and the
real adapters:

- reads per profile read (each turn reads twice: the reply prompt and the extraction): the
  design's newest-ten (a Query of the by_updated index, Limit 10) against the selection's
  whole-profile Query, with vectors of 256 / 512 / 1,024 dimensions stored as int8 bytes (and
  without vectors: lexical only). Read units are estimated from the items' sizes with DynamoDB's
  published rule (4 KB per unit, strongly consistent; moto reports none).
- latency of the reply's memory read: the newest-ten read; the selection, lexical only; and the
  selection with the query embedding through the real Bedrock Titan adapter against a loopback
  endpoint answering after ``MEMORYBOT_BENCH_EMBED_MS`` (default 60 ms), run beside the read,
  with the sequential order (embed, then read) for comparison. moto is far slower than DynamoDB
  at returning thousands of items, so the absolute read times are an upper bound; the difference
  between the concurrent and the sequential columns is what running beside the read saves.
- the ranking's own CPU time (core/prompting/selection.py, pure Python) at each size.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

SIZES = (10, 100, 500, 2000)
DIMENSIONS = (256, 512, 1024)
REPEATS = int(os.environ.get("MEMORYBOT_BENCH_REPEATS", "5"))
EMBED_LATENCY = float(os.environ.get("MEMORYBOT_BENCH_EMBED_MS", "60")) / 1000
READ_PRICE_PER_MILLION = 0.125  # USD, on-demand read request units, us-east-1 list price

TOPICS = [
    "Loves hiking in the Alps with their sister",
    "Works as a nurse at the city hospital on night shifts",
    "Has two cats named Miso and Soba",
    "Plays the guitar in a small jazz band on weekends",
    "妹は大阪に住んでいて、毎年夏に会いに行く",
    "Is learning to bake sourdough bread",
    "週末はベランダでトマトを育てている",
    "Supports the local football club since childhood",
]


def profile_text(i: int) -> str:
    return f"{TOPICS[i % len(TOPICS)]} (note {i}: detail {i * 7 % 101})"


def main() -> None:
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    import boto3

    from benchmarks.dynamodb_cost_bench import Meter
    from memorybot import tables
    from memorybot.adapters.bedrock import bedrock_client
    from memorybot.adapters.dynamodb_memories import DynamoMemoryStore, memory_item
    from memorybot.adapters.embeddings import BedrockTitanEmbeddings
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
    from memorybot.config import Settings
    from memorybot.core.prompting import selection
    from memorybot.core.prompting.recall import Recall
    from memorybot.core.record.domain import PROFILE_LIMIT, Actor, Embedding, Memory, Owner
    from memorybot.local import moto_dynamo
    from tests.fakes import T0
    from tests.loopback.bedrock_server import BedrockServer

    moto = moto_dynamo.start()
    endpoint = BedrockServer()
    endpoint.start()
    endpoint.set_delay(EMBED_LATENCY)
    try:
        client = moto.client()
        moto_dynamo.create_tables(client, "sel-")
        settings = Settings.from_env({"MEMORYBOT_TABLE_PREFIX": "sel-"})
        store = DynamoMemoryStore(client, settings)
        session = boto3.Session(aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1")
        titan_client = bedrock_client(settings, session=session, endpoint_url=endpoint.url)
        meter = Meter(client)

        def seed(owner: Owner, n: int, dims: int | None) -> None:
            """Written with BatchWriteItem (the items the store writes, without ledger rows: quicker)."""
            model = OfflineEmbeddingModel(dims) if dims else None
            items = []
            for i in range(n):
                at = T0 + timedelta(minutes=i)
                vector = None
                if model is not None:
                    vector = Embedding(f"amazon.titan-embed-text-v2:0@{dims}", model.embed_one(profile_text(i)).vector)
                m = Memory(owner.user_id, f"{i:05d}", profile_text(i), at, at, scope=owner.scope, embedding=vector)
                items.append({"PutRequest": {"Item": memory_item(m)}})
            for start in range(0, len(items), 25):
                client.batch_write_item(RequestItems={settings.table(tables.MEMORIES): items[start : start + 25]})

        def metered(read) -> tuple[int, float]:
            before = meter.snapshot()
            read()
            after = meter.snapshot()
            queries = after[0]["Query"] - before[0]["Query"]
            return queries, after[2] - before[2]

        print("DynamoDB per profile read (a turn reads twice: reply prompt and extraction); read units estimated")
        print(
            f"{'memories':>8} {'newest-ten':>16} "
            + " ".join(f"{f'select {d}-d int8':>20}" for d in DIMENSIONS)
            + f" {'select no vector':>18}"
        )
        owners: dict[tuple[int, int | None], Owner] = {}
        for n in SIZES:
            cells = []
            for dims in (*DIMENSIONS, None):
                owner = Owner("guild:1", f"p{n}-{dims}")
                owners[(n, dims)] = owner
                seed(owner, n, dims)
            newest = metered(
                lambda: store.read_profile(owners[(n, 256)], actor=Actor.REPLY, reason="bench", limit=PROFILE_LIMIT)
            )
            for dims in (*DIMENSIONS, None):
                q, rru = metered(
                    lambda dims=dims: store.read_selected(
                        owners[(n, dims)], lambda p: selection.select(p, "hiking"), actor=Actor.REPLY, reason="bench"
                    )
                )
                cells.append(f"{q} Query, {rru:>6.1f} RRU")
            print(f"{n:>8} {f'{newest[0]} Query, {newest[1]:.1f} RRU':>16} " + " ".join(f"{c:>20}" for c in cells))
        for dims in DIMENSIONS:
            _, rru = metered(
                lambda dims=dims: store.read_selected(
                    owners[(2000, dims)], lambda p: p[:10], actor=Actor.REPLY, reason="bench"
                )
            )
            per_k = 1000 * 2 * rru * READ_PRICE_PER_MILLION / 1e6
            print(
                f"  2,000 memories, {dims:>4}-d: ${per_k:.4f} of reads per 1,000 turns (two reads a turn, list price)"
            )

        print()
        print(
            f"reply path: the memory read, median of {REPEATS} (ms); Titan adapter on loopback, "
            f"{EMBED_LATENCY * 1000:.0f} ms a call; the read times are moto's (an upper bound)"
        )
        print(
            f"{'memories':>8} {'newest-ten':>11} {'lexical':>9} {'hybrid, beside':>15} {'embed then read':>16}"
            f" {'waited for the embedding':>25}"
        )
        titan = BedrockTitanEmbeddings(titan_client, "amazon.titan-embed-text-v2:0", 256)
        titan.embed(["warm up the connection"])
        lexical, hybrid = Recall(store, None), Recall(store, titan)
        query = "Did I tell you about hiking with my sister?"
        for n in SIZES:
            owner = owners[(n, 256)]
            waits: list[float] = []

            def timed(fn) -> float:
                samples = []
                for _ in range(REPEATS):
                    began = time.perf_counter()
                    fn()
                    samples.append((time.perf_counter() - began) * 1000)
                return statistics.median(samples)

            def beside() -> None:
                pending = hybrid.start(query)
                embedding = pending.embedding

                def waited():
                    began = time.perf_counter()
                    try:
                        return embedding()
                    finally:
                        waits.append((time.perf_counter() - began) * 1000)

                pending.embedding = waited  # type: ignore[method-assign]
                hybrid.read(owner, pending, actor=Actor.REPLY, reason="bench")

            def sequential() -> None:
                pending = hybrid.start(query)
                pending.embedding()
                hybrid.read(owner, pending, actor=Actor.REPLY, reason="bench")

            old = timed(lambda: store.read_profile(owner, actor=Actor.REPLY, reason="bench", limit=PROFILE_LIMIT))
            lex = timed(lambda: lexical.read(owner, lexical.start(query), actor=Actor.REPLY, reason="bench"))
            both = timed(beside)
            seq = timed(sequential)
            wait = f"{statistics.median(waits):.1f}" if waits else "none: not ranked"
            print(f"{n:>8} {old:>11.1f} {lex:>9.1f} {both:>15.1f} {seq:>16.1f} {wait:>25}")

        print()
        print("the read's client-side CPU, as a Lambda pays it whatever DynamoDB's speed (median ms, 256-d)")
        from botocore.parsers import create_parser

        from memorybot.adapters.dynamodb_memories import memory_from_item

        parser = create_parser("json")
        captured: list = []
        client.meta.events.register(
            "before-parse.dynamodb.Query",
            lambda operation_model, response_dict, **_: captured.append((operation_model, dict(response_dict))),
        )
        for n in SIZES:
            captured.clear()
            store.read_selected(owners[(n, 256)], lambda p: p[:10], actor=Actor.REPLY, reason="bench")
            parse_ms, convert_ms, size = [], [], 0
            for _ in range(REPEATS):
                parse_total = convert_total = 0.0
                for operation, response in captured:
                    began = time.perf_counter()
                    parsed = parser.parse(response, operation.output_shape)
                    middle = time.perf_counter()
                    [memory_from_item(i) for i in parsed["Items"]]
                    parse_total += (middle - began) * 1000
                    convert_total += (time.perf_counter() - middle) * 1000
                parse_ms.append(parse_total)
                convert_ms.append(convert_total)
            size = sum(len(r["body"]) for _, r in captured)
            print(
                f"{n:>8} memories: {size / 1e6:5.2f} MB, botocore parse {statistics.median(parse_ms):6.1f} ms,"
                f" items to memories {statistics.median(convert_ms):6.1f} ms"
            )

        print()
        print("ranking CPU (core/prompting/selection.py, pure Python), median ms")
        model = OfflineEmbeddingModel(256)
        for n in SIZES:
            profile = [
                Memory(
                    "u",
                    f"{i:05d}",
                    profile_text(i),
                    T0,
                    T0 + timedelta(minutes=i),
                    embedding=model.embed_one(profile_text(i)),
                )
                for i in range(n)
            ]
            q = model.embed_one(query)
            runs = []
            for _ in range(REPEATS):
                began = time.perf_counter()
                selection.rank(profile, query, query_embedding=q)
                runs.append((time.perf_counter() - began) * 1000)
            print(f"{n:>8} memories: {statistics.median(runs):7.1f} ms hybrid (256-d)")
    finally:
        endpoint.stop()
        moto.stop()


if __name__ == "__main__":
    main()
