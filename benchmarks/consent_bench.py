"""What reading the person's record (the memory switch, the notices given) adds to the reply path.

The reply worker reads the speaker's profile (a Query and its ledger row's PutItem, one after the
other) and now the person's record too (a GetItem). It reads the record alongside the profile, on
a second thread, not before it. Measured through the real adapters on moto (loopback), with a
fixed delay added to every DynamoDB request as a stand-in for the network (moto answers in well
under a millisecond, DynamoDB in a few): the profile read alone (as before), with the record read
alongside (as built), and with the record read first (the extra round trip avoided).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

REQUEST_DELAY_SECONDS = 0.005  # a same-region DynamoDB round trip, roughly
READS = 150


def _timed(reads: list[Callable[[], object]]) -> list[tuple[float, float]]:
    """(p50, p95) in milliseconds of each read over READS rounds; each round runs every read once,
    in a shuffled order, so that a busy machine's drift falls on all of them alike."""
    samples: list[list[float]] = [[] for _ in reads]
    order = list(range(len(reads)))
    for _ in range(READS):
        random.shuffle(order)
        for i in order:
            started = time.perf_counter()
            reads[i]()
            samples[i].append((time.perf_counter() - started) * 1000)
    return [(statistics.median(s), sorted(s)[int(len(s) * 0.95) - 1]) for s in samples]


def main() -> None:
    from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
    from memorybot.adapters.dynamodb_people import DynamoPeopleStore
    from memorybot.config import Settings
    from memorybot.core.record.changes import Change, LedgerEntry
    from memorybot.core.record.domain import Action, Actor, Memory, Owner, utcnow
    from memorybot.core.record.person import PERSON_SCOPE
    from memorybot.core.turn.reply import ReplyWriter
    from memorybot.local import moto_dynamo
    from tests.fakes import ScriptedChat

    moto = moto_dynamo.start()
    try:
        client = moto.client()
        settings = Settings(table_names=moto_dynamo.create_tables(client, "consent-bench-"))
        client.meta.events.register(
            "before-send.dynamodb", lambda **_: time.sleep(REQUEST_DELAY_SECONDS)
        )  # the stand-in network
        memories = DynamoMemoryStore(client, settings)
        people = DynamoPeopleStore(client, settings)
        owner = Owner("guild:1", "100000000000000001")
        now = utcnow()
        for n in range(10):
            m = Memory(owner.user_id, f"m{n:04d}", f"fact number {n}", now, now, scope=owner.scope)
            memories.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
        people.claim_notice(owner.user_id, owner.scope)
        plain = ReplyWriter(memories, ScriptedChat())
        alongside = ReplyWriter(memories, ScriptedChat(), people)

        def first_then_profile() -> None:
            people.get(owner.user_id)
            plain.read(owner, "alice", [])

        rows = [
            ("profile only (before)", lambda: plain.read(owner, "alice", [])),
            ("profile + record alongside (built)", lambda: alongside.read(owner, "alice", [])),
            ("record first, then profile", first_then_profile),
        ]
        print(f"reply-path read, {READS} rounds, {REQUEST_DELAY_SECONDS * 1000:.0f} ms added per DynamoDB request:")
        for _, read in rows:
            read()  # warm: the clients' first-call setup is not measured
        figures = _timed([read for _, read in rows])
        base = figures[0][0]
        for (label, _), (p50, p95) in zip(rows, figures, strict=True):
            print(f"  {label:38s} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  ({p50 - base:+6.2f} ms p50)")
        paused = LedgerEntry(owner.user_id, Action.PAUSE, Actor.COMMAND, "bench", utcnow(), scope=PERSON_SCOPE)
        people.pause(owner.user_id, paused)
        assert alongside.read(owner, "alice", [])[0].paused  # the record read is the one used
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
