"""A reply for a person with 2,000 memories against one with ten: DynamoDB read units and wall time.

Runs the real local stack in this process (``memorybot local``'s server: the HTTP endpoints, moto's
DynamoDB server on loopback, the offline models), once per profile size, for one person in the
local server's scope, seeded with N memories, each with a 256-dimension vector (the deployed
size) through the store's own write path. Then, after two warm-up turns (the first read of a
function that writes memories builds the person's selection index, once):

- the reply's memory read (``ReplyWriter.read``: the person's record, the profile read and its
  selection, the read's ledger row): requests, read units, median wall time; "first" is the
  function's first read of the person (its copy of the index dropped before each), "changed" a
  later read after one of the person's memories changed (as after a turn that learned something),
  "warm" a later read with nothing changed between;
- a whole ``/chat`` turn through the HTTP front door (the reply, and the extraction that reads
  the relevant ten again): read units and median wall time.

Read units are estimated from the items' sizes with DynamoDB's rule (benchmarks/dynamodb_cost_bench:
4 KB per unit strongly consistent, half for eventually consistent, a Query's items summed, each item
of a BatchGetItem rounded up on its own); moto reports none. The same file runs against older code for a "before" figure
(``PYTHONPATH=<older tree>/functions python -m benchmarks big_profile``).
``MEMORYBOT_BENCH_SIZES`` (default "10,2000") and ``MEMORYBOT_BENCH_REPEATS`` (default 7) set the
sizes and repeats.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from benchmarks.selection_cost_bench import profile_text  # the same generated profile texts

SIZES = tuple(int(n) for n in os.environ.get("MEMORYBOT_BENCH_SIZES", "10,2000").split(","))
REPEATS = int(os.environ.get("MEMORYBOT_BENCH_REPEATS", "7"))
# The reply's read in three states of the function's copy of the person's index.
READS = {
    "first": "a function's first read of the person",
    "changed": "a later read, one memory changed since",
    "warm": "a later read, nothing changed since",
}
SAYINGS = ["how are the cats doing?", "any good bread recipes?", "what did my sister say about Osaka?", "haha"]


def _meter(client):
    """benchmarks/dynamodb_cost_bench's Meter, with BatchGetItem's reads (each item rounded up)."""
    from benchmarks.dynamodb_cost_bench import Meter, item_size

    meter = Meter(client)

    def batch_reads(model, parsed, **_) -> None:
        if model.name == "BatchGetItem":
            items = [i for found in parsed.get("Responses", {}).values() for i in found]
            with meter.lock:
                meter.rru += sum(max(1, math.ceil(item_size(i) / 4096)) for i in items)

    client.meta.events.register("after-call.dynamodb", batch_reads)
    return meter


def _one_size(n: int) -> dict[str, float]:
    from memorybot import bootstrap
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
    from memorybot.core.record.changes import Change
    from memorybot.core.record.domain import (
        EVERYWHERE_SCOPE,
        Action,
        Actor,
        Memory,
        Message,
        Owner,
        new_memory_id,
        utcnow,
    )
    from memorybot.local import server
    from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key
    from memorybot.local.discord_recorder import LOCAL_GUILD_ID
    from memorybot.local.people import user_id_for

    state = Path(tempfile.mkdtemp(prefix="memorybot-bench-"))
    stack = server.start(port=0, state_dir=state)
    try:
        container = bootstrap.container()
        store = container.memory_store
        owner = Owner(f"guild:{LOCAL_GUILD_ID}", user_id_for("alice"))
        embeddings = OfflineEmbeddingModel(256)
        start = utcnow() - timedelta(days=400)
        seeded = []
        for i in range(n):
            at = start + timedelta(hours=4 * i)
            text = profile_text(i)
            m = Memory(owner.user_id, new_memory_id(), text, at, at, scope=owner.scope)
            seeded.append(replace(m, embedding=embeddings.embed_one(text)))
            store.apply(Change(Action.ADD, None, seeded[-1], "seed"), actor=Actor.EXTRACTION)
        client = LocalClient(stack.url, "alice", find_signing_key(state), admin_secret=find_admin_secret(state))
        client.catch_up()
        for saying in SAYINGS[:2]:  # warm-up: imports, caches, and (on this code) the index's build
            client.chat(saying)

        meter = _meter(container.dynamodb_client)
        conversation = [Message("c1", str(10**17 + i), owner.user_id, "alice", s) for i, s in enumerate(SAYINGS)]
        cache = getattr(store, "_cache", None)  # the warm function's copy of the index (not in older code)
        owners = [owner, Owner(EVERYWHERE_SCOPE, owner.user_id)]
        figures: dict[str, list[float]] = {}
        for i in range(REPEATS):
            for label in READS:
                if label == "first" and cache is not None:
                    for who in owners:
                        cache.evict(who.key)
                if label == "changed":  # one memory's text updated, as a turn that learned something does
                    old = seeded[i % n]
                    seeded[i % n] = replace(old, text=f"{old.text} ({i})", updated_at=utcnow())
                    store.apply(Change(Action.UPDATE, old, seeded[i % n], "bench"), actor=Actor.EXTRACTION)
                before = meter.snapshot()
                began = time.perf_counter()
                container.reply_writer.read(owner, "alice", conversation[: 1 + i % len(SAYINGS)])
                figures.setdefault(f"{label}_ms", []).append(1000 * (time.perf_counter() - began))
                after = meter.snapshot()
                figures.setdefault(f"{label}_rru", []).append(after[2] - before[2])
                figures.setdefault(f"{label}_requests", []).append(sum((after[0] - before[0]).values()))
        turns, turn_ms = [], []
        for i in range(REPEATS):
            before = meter.snapshot()
            began = time.perf_counter()
            client.chat(SAYINGS[i % len(SAYINGS)])
            turn_ms.append(1000 * (time.perf_counter() - began))
            turns.append(meter.snapshot()[2] - before[2])
        return {
            **{name: statistics.median(values) for name, values in figures.items()},
            "read_requests": statistics.median(figures["first_requests"]),
            "read_rru": statistics.median(figures["first_rru"]),
            "read_ms": statistics.median(figures["first_ms"]),
            "turn_rru": statistics.median(turns),
            "turn_ms": statistics.median(turn_ms),
        }
    finally:
        stack.stop()


def _states(figures: dict[str, float], what: str, spec: str) -> str:
    return " / ".join(format(figures[f"{state}_{what}"], spec) for state in READS)


def main() -> None:
    from memorybot import bootstrap

    print(f"code under test: {Path(bootstrap.__file__).parent}")
    print(f"a person's memories (256-d vectors) on the local stack; medians of {REPEATS}")
    print("reply's memory read: a function's first read of the person / after a change / nothing changed")
    print(f"{'memories':>8} | {'requests':>12} | {'read units':>18} | {'ms':>21} | /chat turn: read units, ms")
    figures = {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "AWS_ENDPOINT", "JEV_"))}
    env = {k: v for k, v in env.items() if not k.startswith("MEMORYBOT_") or k.startswith("MEMORYBOT_BENCH_")}
    env["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    for n in SIZES:
        # A process per size: the local stack and its container are made once per process.
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.big_profile_bench", str(n)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        f = figures[n] = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{n:>8} | {_states(f, 'requests', '.0f'):>12} | {_states(f, 'rru', '.1f'):>18}"
            f" | {_states(f, 'ms', '.1f'):>21}"
            f" | {f['turn_rru']:>10.1f} {f['turn_ms']:>8.1f}"
        )
    if len(SIZES) >= 2:
        small, large = figures[SIZES[0]], figures[SIZES[-1]]
        for label, what in READS.items():
            print(
                f"{SIZES[-1]} ÷ {SIZES[0]}, reply's read, {what}: {large[label + '_rru'] / small[label + '_rru']:.1f}×"
                f" read units, {large[label + '_ms'] / small[label + '_ms']:.1f}× wall (goal: ≤ 2×)"
            )
        print(
            f"{SIZES[-1]} ÷ {SIZES[0]}, /chat turn (reply and extraction): {large['turn_rru'] / small['turn_rru']:.1f}× "
            f"read units, {large['turn_ms'] / small['turn_ms']:.1f}× wall"
        )
    if importlib.util.find_spec("memorybot.adapters.profile_index") is not None:  # not in older code
        vector_tradeoff()


def _signs(vector: tuple[float, ...]) -> tuple[float, ...]:
    """A vector kept as its signs only (one bit a dimension), read back normalised."""
    scale = 1 / math.sqrt(len(vector))
    return tuple(scale if x >= 0 else -scale for x in vector)


def vector_tradeoff() -> None:
    """What a smaller vector in the index would save, and what it would cost in recall@10 on the
    generated profiles (benchmarks/data, as recall_bench reads them): the stored int8 vector (what
    the index holds: the same ten as the whole profile) against its signs alone (1 bit a dimension,
    the query kept whole). With MEMORYBOT_BENCH_E5=1 (and the bench-semantic extra) also with
    multilingual-e5-small; otherwise with the offline stand-in only, which knows spelling, not
    meaning."""
    from benchmarks.recall_bench import embedding_models, load
    from memorybot.adapters import profile_index, vectors
    from memorybot.core.prompting.selection import select
    from memorybot.core.record.domain import Embedding

    def recall(people, model) -> tuple[float, float]:
        hits = {"int8": 0, "signs": 0}
        questions = 0
        for person in people:
            found = model.embed([m.text for m in person.memories])
            stored = [Embedding(e.model, vectors.decode(vectors.encode(e.vector))) for e in found]
            as_int8 = [replace(m, embedding=e) for m, e in zip(person.memories, stored, strict=True)]
            as_signs = [
                replace(m, embedding=Embedding(e.model, _signs(e.vector)))
                for m, e in zip(person.memories, found, strict=True)
            ]
            for q in person.questions:
                query = model.embed([q["text"]])[0]
                evidence = set(q["evidence"])
                questions += 1
                for label, memories in (("int8", as_int8), ("signs", as_signs)):
                    ten = select(memories, q["text"], query_embedding=query)
                    hits[label] += any(m.memory_id in evidence for m in ten)
        return hits["int8"] / questions, hits["signs"] / questions

    entry = sum(len(profile_index.encode_entry(_sized(i))) for i in range(2000)) / 2000
    print("\nthe index's vector: the stored int8 bytes (the same ten as the whole profile) or its signs alone")
    print(f"  an entry at 256 dimensions: {entry + 5:.0f} bytes with int8 (~{2000 * (entry + 5) / 4096:.0f} read units")
    print(
        f"  for 2,000 memories), {entry + 5 - 261 + 32:.0f} bytes with signs (~{2000 * (entry + 5 - 229) / 4096:.0f} read units)"
    )
    with embedding_models() as models:
        print(f"  {'lang':<5}{'model':<24}{'recall@10 int8':>15}{'signs':>8}")
        for label, model in models.items():
            for code in ("en", "ja"):
                int8, signs = recall(load(code), model)
                print(f"  {code:<5}{label:<24}{100 * int8:>14.1f}%{100 * signs:>7.1f}%")


def _sized(i: int):
    """A memory of the benchmark's texts with a 256-dimension vector, for the entry's size."""
    from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
    from memorybot.core.record.domain import Memory, utcnow

    now = utcnow()
    return Memory(
        "u", "abcde", profile_text(i), now, now, embedding=OfflineEmbeddingModel(256).embed_one(profile_text(i))
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["vectors"]:
        vector_tradeoff()
    elif len(sys.argv) > 1:
        print(json.dumps(_one_size(int(sys.argv[1]))))
    else:
        main()
