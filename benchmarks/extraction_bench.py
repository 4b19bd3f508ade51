"""Extraction wall time with ten memories, as a multiple of the simulated model latency L.

The worst case for the write path: Jev says "update" to all ten memories and wants an add,
so every step runs. Sequentially that is 1 worth + 10 verdicts + 1 add + 10 rewrites + 1 add
text = 23 calls (13 L even without the rewrites). The goal is at most 4.5 L.
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes import T0, FakeMemoryStore, memory, message, speaker  # noqa: E402
from memorybot.domain import GLOBAL_SCOPE, Verdict  # noqa: E402
from memorybot.extraction import Extractor  # noqa: E402

LATENCIES = (0.05, 0.2)
RUNS = 5


class SlowJev:
    def __init__(self, latency):
        self.latency = latency

    def worth(self, exchange):
        time.sleep(self.latency)
        return 0.9

    def verdict(self, exchange, memory):
        time.sleep(self.latency)
        return Verdict.UPDATE

    def add(self, exchange, verdicts):
        time.sleep(self.latency)
        return 0.9

    def review(self, memory):
        time.sleep(self.latency)
        return Verdict.KEEP


class SlowChat:
    def __init__(self, latency):
        self.latency = latency

    def write_memory(self, exchange, current):
        time.sleep(self.latency)
        return f"rewritten {current.memory_id}" if current else "a new fact"


def one_run(latency: float) -> tuple[float, int]:
    store = FakeMemoryStore()
    store.seed(*(memory("u1", f"m{c}222", f"fact {c}", at=T0 + timedelta(minutes=i)) for i, c in enumerate("abcdefghjk")))
    extractor = Extractor(store, SlowJev(latency), SlowChat(latency))
    started = time.perf_counter()
    result = extractor.run(speaker("u1", "alice"), GLOBAL_SCOPE, [message("u1", "I moved to Osaka last week", name="alice")])
    elapsed = time.perf_counter() - started
    assert len(result.updated) == 10 and len(result.added) == 1, result
    return elapsed, result.model_calls


def main() -> None:
    print(f"{'L (s)':>6} {'calls':>6} {'median (s)':>11} {'wall / L':>9} {'sequential / L':>15}")
    for latency in LATENCIES:
        runs = [one_run(latency) for _ in range(RUNS)]
        median = statistics.median(r[0] for r in runs)
        calls = runs[0][1]
        print(f"{latency:>6.2f} {calls:>6} {median:>11.3f} {median / latency:>9.2f} {calls:>15}")
    print("goal: wall / L <= 4.5 (critical path: worth, verdicts, add decision || rewrites, add text = 4 L)")


if __name__ == "__main__":
    main()
