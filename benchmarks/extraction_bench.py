"""Extraction wall time with ten memories, as a multiple of the simulated model latency L.

The worst case for the write path: Jev says "update" to all ten memories and wants an add,
so every step runs. Sequentially that is 1 worth + 10 verdicts + 1 add + 10 rewrites + 1 add
text = 23 calls (13 L even without the rewrites). The goal is at most 4.5 L. The calls go
through the real OpenAI-compatible adapters (retry policy, limiter) over HTTP to the loopback
stand-in, which answers every call after L.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

from benchmarks.stand_in import stand_in_client, stand_in_models
from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.core.domain import GLOBAL_SCOPE
from memorybot.core.extraction import Extractor
from tests.fakes import T0, FakeMemoryStore, memory, message, speaker
from tests.loopback.openai_server import OpenAIServer

LATENCIES = (0.05, 0.2)
RUNS = 5
MAX_IN_FLIGHT = 32  # the default MEMORYBOT_MODEL_MAX_IN_FLIGHT


def one_run(llm: OpenAIServer, latency: float) -> tuple[float, int]:
    """Through the real OpenAI-compatible adapters, over HTTP, against a stand-in with latency L."""
    llm.clear()
    llm.set_delay(latency)
    store = FakeMemoryStore()
    store.seed(
        *(memory("u1", f"m{c}222", f"fact {c}", at=T0 + timedelta(minutes=i)) for i, c in enumerate("abcdefghjk"))
    )
    client = stand_in_client(llm.url, ModelCallLimiter(MAX_IN_FLIGHT))
    extractor = Extractor(store, *stand_in_models(client))
    started = time.perf_counter()
    result = extractor.run(
        speaker("u1", "alice"), GLOBAL_SCOPE, [message("u1", "I moved to Osaka last week", name="alice")]
    )
    elapsed = time.perf_counter() - started
    client.close()
    assert len(result.updated) == 10 and len(result.added) == 1, result
    return elapsed, result.model_calls


def main() -> None:
    print(f"{'L (s)':>6} {'calls':>6} {'median (s)':>11} {'wall / L':>9} {'sequential / L':>15}")
    with OpenAIServer(default_verdict="update", default_probability=0.9) as llm:
        llm.responder = None
        rows = [(latency, [one_run(llm, latency) for _ in range(RUNS)]) for latency in LATENCIES]
    for latency, runs in rows:
        median = statistics.median(r[0] for r in runs)
        calls = runs[0][1]
        print(f"{latency:>6.2f} {calls:>6} {median:>11.3f} {median / latency:>9.2f} {calls:>15}")
    print("goal: wall / L <= 4.5 (critical path: worth, verdicts, add decision || rewrites, add text = 4 L)")


if __name__ == "__main__":
    main()
