"""Nightly run wall time for 100 and 1,000 active speakers at a model latency L, through the real
adapters: the OpenAI-compatible backend over HTTP to a loopback model server that holds each call
for L, under the process's model-call limiter (MEMORYBOT_MODEL_MAX_IN_FLIGHT's default).

Every speaker had a busy day: 30 messages (five chunks, the cap) and ten memories; Jev
keeps every memory and wants an add each time, so each chunk costs 1 worth + 1 decision (every
memory and the add) + 1 add text, drafted beside the decision = 3 calls, with a critical path of
2 L (the per-record path took 13: a verdict a memory and an add decision, 4 L). Plus 20 stale
reviews and the diary.

"Sequential" is every model call one after another: calls x L (a lower bound for a
one-call-at-a-time implementation; store time is not counted in it). L = 20 ms keeps
the whole benchmark well under a minute; the ratio, not the absolute time, is the figure
to read, since real model latencies are 10-50x longer and scale both sides alike.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from benchmarks.stand_in import stand_in_client, stand_in_models
from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.config import Settings
from memorybot.core.night.consolidation import SPEAKER_CONCURRENCY, Consolidator
from memorybot.core.night.nightly_steps import run_in_process
from memorybot.core.night.window import CHUNK_MESSAGES, CHUNKS_PER_SPEAKER, STALE_AFTER, max_model_calls
from memorybot.core.record.changes import LedgerEntry
from memorybot.core.record.domain import JST, Action, Memory, Owner
from memorybot.core.record.ports import ConflictError
from memorybot.core.turn.extraction import Extractor
from tests.fakes import FakeMessageStore, FakeRunStore, message
from tests.loopback.openai_server import OpenAIServer

# Settable, e.g. MEMORYBOT_BENCH_LATENCY_MS=200 MEMORYBOT_BENCH_SPEAKER_COUNTS=100 to see the
# wall time approach the limiter's ideal once L dwarfs the CPU each call costs here.
LATENCY = float(os.environ.get("MEMORYBOT_BENCH_LATENCY_MS", "20")) / 1000  # seconds per simulated model call
SPEAKER_COUNTS = tuple(int(n) for n in os.environ.get("MEMORYBOT_BENCH_SPEAKER_COUNTS", "100,1000").split(","))
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

    def read_selected(self, owner, choose, *, actor, reason, run_id=None, unused_if=None):
        with self._lock:
            profile = list(self.rows.get(owner, {}).values())
            if unused_if is not None and unused_if():
                return []
            chosen = choose(profile)
            ids = tuple(m.memory_id for m in chosen)
            self.ledger.append(
                LedgerEntry(owner.user_id, Action.READ, actor, reason, NOW, ids, run_id=run_id, scope=owner.scope)
            )
            return chosen

    def get(self, owner, memory_id):
        return self.rows.get(owner, {}).get(memory_id)

    def apply(self, change, *, actor, run_id=None, ledger_action=None, redacted=False, check=None):
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

    def ended(self, now, limit):
        return []  # no memory here has an end: the review takes the stale ones

    def ledger_for_run(self, run_id):
        return [e for e in reversed(self.ledger) if e.run_id == run_id]

    def ledger_for(self, owner, limit=100):
        return [e for e in reversed(self.ledger) if e.owner == owner][:limit]

    def log_read(self, owner, memory_ids, *, actor, reason, run_id=None):
        pass  # the ledger is not what this benchmark times

    def forgotten_sources(self, owner):
        return frozenset()

    def mark_reviewed(self, memory, at):
        with self._lock:
            mine = self.rows.get(memory.owner, {})
            if memory.memory_id in mine:
                mine[memory.memory_id] = replace(mine[memory.memory_id], reviewed_at=at)


def one_night(llm: OpenAIServer, speakers: int) -> tuple[float, float, int]:
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
    client = stand_in_client(llm.url, ModelCallLimiter(MAX_IN_FLIGHT))
    jev, chat = stand_in_models(client)
    extractor = Extractor(memories, jev, chat)
    consolidator = Consolidator(memories, messages, FakeRunStore(), extractor, jev, chat, manifests=InMemoryManifests())
    started, cpu_started = time.perf_counter(), time.process_time()
    run = run_in_process(consolidator, NOW)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    client.close()
    calls = llm.served
    assert run is not None and run.summary.model_calls == calls <= max_model_calls(speakers)
    return elapsed, cpu, calls


def main() -> None:
    print(
        f"L = {LATENCY * 1000:.0f} ms per model call, real adapters over loopback HTTP, {MAX_IN_FLIGHT} calls in flight "
        f"at most; {SPEAKER_CONCURRENCY} speakers at a time; "
        f"{CHUNKS_PER_SPEAKER} chunks and {MEMORIES_PER_SPEAKER} memories per speaker"
    )
    print(
        f"{'speakers':>9} {'calls':>7} {'bound':>7} {'wall (s)':>9} {'sequential (s)':>15} {'speedup':>8} "
        f"{'ideal (s)':>10} {'wall / ideal':>13} {'CPU ms/call':>12}"
    )
    with OpenAIServer() as llm:
        nights = [(speakers, *one_night(llm, speakers)) for speakers in SPEAKER_COUNTS]
    for speakers, elapsed, cpu, calls in nights:
        sequential = calls * LATENCY
        ideal = calls * LATENCY / MAX_IN_FLIGHT
        print(
            f"{speakers:>9} {calls:>7} {max_model_calls(speakers):>7} {elapsed:>9.2f} {sequential:>15.1f} "
            f"{sequential / elapsed:>7.1f}x {ideal:>10.1f} {elapsed / ideal:>13.2f} {cpu / calls * 1000:>12.2f}"
        )
    print(
        "ideal = calls x L / calls in flight (the limiter's bound). CPU ms/call is this process's CPU per model call:"
        " the adapters, the stores and the loopback model server share it, so where it exceeds L / in-flight"
        " the machine, not the limiter, sets the pace"
    )


if __name__ == "__main__":
    main()
