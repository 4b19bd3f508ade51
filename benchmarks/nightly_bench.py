"""Nightly run wall time for 100 and 1,000 active speakers at a model latency L, through the real
adapters: the OpenAI-compatible backend over HTTP to a loopback model server that holds each call
for L, under the process's model-call limiter (MEMORYBOT_MODEL_MAX_IN_FLIGHT's default).

Every speaker had a busy day: 30 messages (five chunks, the cap) and ten memories; Jev
keeps every memory and wants an add each time, so each chunk costs 1 worth + 10
verdicts + 1 add decision + 1 add text = 13 calls, with a critical path of 4 L
(worth, the verdicts in parallel, add, text). Plus 20 stale reviews and the diary.

"Sequential" is every model call one after another: calls x L (a lower bound for a
one-call-at-a-time implementation; store time is not counted in it). L = 20 ms keeps
the whole benchmark well under a minute; the ratio, not the absolute time, is the figure
to read, since real model latencies are 10-50x longer and scale both sides alike.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import Retrier
from memorybot.config import Settings
from memorybot.core.consolidation import (
    CHUNK_MESSAGES,
    CHUNKS_PER_SPEAKER,
    SPEAKER_CONCURRENCY,
    STALE_AFTER,
    Consolidator,
    max_model_calls,
)
from memorybot.core.domain import JST, Action, LedgerEntry, Memory, Owner
from memorybot.core.extraction import Extractor
from memorybot.core.ports import ConflictError
from tests.fakes import FakeMessageStore, FakeRunStore, message
from tests.loopback.openai_server import OpenAIServer

LATENCY = 0.02  # seconds per simulated model call
SPEAKER_COUNTS = (100, 1000)
MEMORIES_PER_SPEAKER = 10
STALE_RECORDS = 25
NOW = datetime(2026, 11, 30, 3, 0, tzinfo=JST)
MAX_IN_FLIGHT = Settings.model_max_in_flight  # the deployed default


class PerUserStore:
    """An in-memory MemoryStore indexed by owner, so the store is not what gets measured."""

    def __init__(self) -> None:
        self.rows: dict[Owner, dict[str, Memory]] = {}
        self.ledger: list[LedgerEntry] = []
        self._lock = threading.Lock()

    def seed(self, m: Memory) -> None:
        self.rows.setdefault(m.owner, {})[m.memory_id] = m

    def read_profile(self, owner, *, actor, reason, limit, run_id=None):
        with self._lock:
            profile = sorted(self.rows.get(owner, {}).values(), key=lambda m: m.updated_at, reverse=True)[:limit]
            ids = tuple(m.memory_id for m in profile)
            self.ledger.append(
                LedgerEntry(owner.user_id, Action.READ, actor, reason, NOW, ids, run_id=run_id, scope=owner.scope)
            )
            return profile

    def get(self, owner, memory_id):
        return self.rows.get(owner, {}).get(memory_id)

    def apply(self, change, *, actor, run_id=None, ledger_action=None, redacted=False):
        with self._lock:
            mine = self.rows.setdefault(change.owner, {})
            if mine.get(change.memory_id) != change.before:
                raise ConflictError(change.memory_id)
            if change.after is None:
                del mine[change.memory_id]
            else:
                mine[change.memory_id] = change.after
            entry = LedgerEntry(
                change.user_id,
                change.action,
                actor,
                change.reason,
                NOW,
                (change.memory_id,),
                change.before,
                change.after,
                run_id,
                scope=change.owner.scope,
            )
            self.ledger.append(entry)
            return entry

    def stale(self, updated_before, limit):
        every = (m for mine in self.rows.values() for m in mine.values() if m.updated_at < updated_before)
        return sorted(every, key=lambda m: m.updated_at)[:limit]

    def ledger_for_run(self, run_id):
        return [e for e in reversed(self.ledger) if e.run_id == run_id]

    def ledger_for(self, owner, limit=100):
        return [e for e in reversed(self.ledger) if e.owner == owner][:limit]

    def log_read(self, owner, memory_ids, *, actor, reason, run_id=None):
        pass  # the ledger is not what this benchmark times

    def forgotten_sources(self, owner):
        return frozenset()


def one_night(llm: OpenAIServer, speakers: int) -> tuple[float, int]:
    memories, messages = PerUserStore(), FakeMessageStore()
    start = NOW - timedelta(hours=23)
    day_start = datetime(2026, 11, 20, tzinfo=UTC)
    for s in range(speakers):
        for k in range(MEMORIES_PER_SPEAKER):
            memories.seed(Memory(f"u{s}", f"m{k:04d}", f"fact {k}", day_start, day_start))
        for i in range(CHUNK_MESSAGES * CHUNKS_PER_SPEAKER):
            messages.put(message(f"u{s}", f"message {i}", at=start + timedelta(seconds=s * 40 + i)))
    old = NOW - STALE_AFTER - timedelta(days=1)
    for k in range(STALE_RECORDS):
        memories.seed(Memory("quiet", f"q{k:04d}", f"old {k}", old, old))
    # Jev keeps every memory and wants an add each time (the stand-in's default answers).
    llm.clear()
    llm.set_delay(LATENCY)
    client = OpenAICompatibleClient(
        llm.url,
        "stand-in",
        timeout_seconds=8.0,
        max_connections=MAX_IN_FLIGHT,
        retrier=Retrier(limiter=ModelCallLimiter(MAX_IN_FLIGHT)),
    )
    jev, chat = OpenAIDecisionModel(client), OpenAIChatModel(client)
    extractor = Extractor(memories, jev, chat)
    consolidator = Consolidator(memories, messages, FakeRunStore(), extractor, jev, chat)
    started = time.perf_counter()
    run = consolidator.run(NOW)
    elapsed = time.perf_counter() - started
    client.close()
    calls = llm.served
    assert run is not None and run.summary["model_calls"] == calls <= max_model_calls(speakers)
    return elapsed, calls


def main() -> None:
    print(
        f"L = {LATENCY * 1000:.0f} ms per model call, real adapters over loopback HTTP, {MAX_IN_FLIGHT} calls in flight "
        f"at most; {SPEAKER_CONCURRENCY} speakers at a time; "
        f"{CHUNKS_PER_SPEAKER} chunks and {MEMORIES_PER_SPEAKER} memories per speaker"
    )
    print(
        f"{'speakers':>9} {'calls':>7} {'bound':>7} {'wall (s)':>9} {'sequential (s)':>15} {'speedup':>8} {'wall / L':>9}"
    )
    with OpenAIServer() as llm:
        nights = [(speakers, *one_night(llm, speakers)) for speakers in SPEAKER_COUNTS]
    for speakers, elapsed, calls in nights:
        sequential = calls * LATENCY
        print(
            f"{speakers:>9} {calls:>7} {max_model_calls(speakers):>7} {elapsed:>9.2f} {sequential:>15.1f} "
            f"{sequential / elapsed:>7.1f}x {elapsed / LATENCY:>9.0f}"
        )
    print("critical path per speaker: 5 chunks x 4 L = 20 L; with the limiter, ideal wall ~ calls x L / max in flight")


if __name__ == "__main__":
    main()
