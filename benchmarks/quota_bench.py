"""Model calls under a quota, through the real adapters over HTTP against a stand-in model.

The stand-in is the loopback OpenAI-compatible server with latency L and a quota of Q
requests per minute (above it: 429 with Retry-After and retry-after-ms). Decisions and texts
both go to it (one model, one quota), through ``OpenAIDecisionModel``/``OpenAIChatModel``,
the shared retry policy and a ``ModelCallLimiter`` configured with RPM = Q.

1. A night: SPEAKERS busy speakers, each one chunk through the real per-speaker step
   (``Extractor.run`` with actor nightly) with MEMORIES memories (keep all, add one: 1 worth +
   MEMORIES verdicts + 1 add + 1 text calls), MAP_CONCURRENCY speakers at a time (what a
   Map state would run), one process and one limiter. Printed: decisions lost (speakers whose
   extraction raised ModelUnavailable), wall ÷ (model calls ÷ Q) (1.0 is the quota's own
   floor), peak calls in flight (limiter and server) against the configured limit.
2. The live path: LIVE_TURNS /chat turns at once, each its own instance (own limiter, as
   separate Lambda instances are) against the same quota: the reply, then its extraction; an
   extraction that raises ModelUnavailable is run again after LAMBDA_RETRY_DELAY (Lambda's
   async retry, scaled down) up to twice. Printed: decisions lost, the extraction delay
   (reply posted -> extraction applied) p50/p95.
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from benchmarks.nightly_bench import PerUserStore
from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import Retrier, RetryPolicy
from memorybot.core.domain import GLOBAL_SCOPE, Actor, Memory, PromptMessage
from memorybot.core.extraction import Extractor
from memorybot.core.ports import ModelUnavailable
from tests.fakes import message
from tests.fakes import speaker as speaker_named
from tests.loopback.openai_server import OpenAIServer

L = 0.020  # seconds per model call
Q = 12_000  # model requests per minute
MAX_IN_FLIGHT = 32  # MEMORYBOT_MODEL_MAX_IN_FLIGHT
SPEAKERS = 1_000
MEMORIES = 5
MAP_CONCURRENCY = 40
LIVE_TURNS = 100
LAMBDA_RETRY_DELAY = 1.0  # Lambda waits 1 and then 2 minutes; scaled down
POLICY = RetryPolicy(deadline_seconds=60.0)
DAY = datetime(2026, 11, 20, tzinfo=UTC)


def _backends(url: str, limiter: ModelCallLimiter) -> tuple[OpenAIDecisionModel, OpenAIChatModel]:
    client = OpenAICompatibleClient(
        url, "stand-in", timeout_seconds=8.0, max_connections=limiter.max_in_flight, retrier=Retrier(POLICY, limiter)
    )
    return OpenAIDecisionModel(client), OpenAIChatModel(client)


def _seed(store: PerUserStore, speaker: str) -> list:
    for k in range(MEMORIES):
        store.seed(Memory(speaker, f"m{k:04d}", f"fact {k}", DAY, DAY))
    return [message(speaker, f"message {i} about my week", at=DAY + timedelta(hours=10, seconds=i)) for i in range(6)]


def night(llm: OpenAIServer) -> None:
    llm.clear()
    llm.set_delay(L)
    llm.set_quota(Q)
    store = PerUserStore()
    chunks = {f"s{n}": _seed(store, f"s{n}") for n in range(SPEAKERS)}
    limiter = ModelCallLimiter(MAX_IN_FLIGHT, Q)
    jev, chat = _backends(llm.url, limiter)
    extractor = Extractor(store, jev, chat)
    lost = []

    def speaker(item):
        speaker_id, messages = item
        try:
            return extractor.run(speaker_named(speaker_id), GLOBAL_SCOPE, messages, actor=Actor.NIGHTLY, run_id=1)
        except ModelUnavailable:
            lost.append(speaker_id)
            return None

    started = time.perf_counter()
    with ThreadPoolExecutor(MAP_CONCURRENCY) as pool:
        results = list(pool.map(speaker, chunks.items()))
    wall = time.perf_counter() - started
    calls = llm.served
    no_decision = sum(r.failures for r in results if r is not None)
    floor = calls / (Q / 60)
    print(
        f"night: {SPEAKERS} speakers x 1 chunk, {MEMORIES} memories each; L = {L * 1000:.0f} ms, "
        f"Q = {Q:,}/min, limiter {MAX_IN_FLIGHT} in flight and {Q:,}/min, {MAP_CONCURRENCY} speakers at a time"
    )
    print(f"  model calls {calls:,}, throttled answers {llm.throttled}, calls without a usable answer {no_decision}")
    print(f"  decisions lost {len(lost)} (goal 0)")
    print(f"  wall {wall:.1f} s; calls / Q = {floor:.1f} s; wall / (calls / Q) = {wall / floor:.2f} (goal <= 1.2)")
    print(
        f"  peak calls in flight: limiter {limiter.peak_in_flight}, server {llm.peak_in_flight} (limit {MAX_IN_FLIGHT})"
    )


def live(llm: OpenAIServer) -> None:
    llm.clear()
    llm.set_delay(L)
    llm.set_quota(Q)
    store = PerUserStore()
    lost, delays, reruns, lock = [], [], [], threading.Lock()
    began: list[float] = []
    gate = threading.Barrier(LIVE_TURNS, action=lambda: began.append(time.perf_counter()))  # every turn ready

    def turn(n: int) -> None:
        speaker = f"u{n}"
        messages = _seed(store, speaker)
        jev, chat = _backends(llm.url, ModelCallLimiter(MAX_IN_FLIGHT, Q))  # one instance each
        extractor = Extractor(store, jev, chat)
        gate.wait()
        try:
            chat.write_reply([PromptMessage("system", "persona"), PromptMessage("user", f"{speaker}: hello")])
        except ModelUnavailable:
            pass  # the reply worker's own retries; not what this figure is about
        replied = time.perf_counter()
        for attempt in range(3):  # the first attempt and Lambda's two retries
            try:
                extractor.run(speaker_named(speaker), GLOBAL_SCOPE, messages, actor=Actor.EXTRACTION)
                with lock:
                    delays.append(time.perf_counter() - replied)
                return
            except ModelUnavailable:
                if attempt < 2:
                    with lock:
                        reruns.append(speaker)
                    time.sleep(LAMBDA_RETRY_DELAY * (attempt + 1))
        with lock:
            lost.append(speaker)

    with ThreadPoolExecutor(LIVE_TURNS) as pool:
        list(pool.map(turn, range(LIVE_TURNS)))
    wall = time.perf_counter() - began[0]
    delays.sort()
    p95 = delays[min(len(delays) - 1, int(len(delays) * 0.95))] if delays else float("nan")
    p50 = statistics.median(delays) if delays else float("nan")
    print(
        f"live: {LIVE_TURNS} /chat turns at once, each instance with its own limiter ({MAX_IN_FLIGHT} in flight, "
        f"{Q:,}/min), {MEMORIES} memories each; same L and Q"
    )
    print(
        f"  model calls {llm.served:,}, throttled answers {llm.throttled}, wall {wall:.1f} s "
        f"(calls / Q = {llm.served / (Q / 60):.1f} s)"
    )
    print(
        f"  extractions run again by the (simulated) Lambda retry: {len(reruns)}; decisions lost {len(lost)} (goal 0)"
    )
    print(f"  extraction delay after the reply: p50 {p50:.2f} s ({p50 / L:.0f} L), p95 {p95:.2f} s ({p95 / L:.0f} L)")


def main() -> None:
    with OpenAIServer(default_verdict="keep", default_probability=0.9, default_text="a new fact") as llm:
        night(llm)
        live(llm)


if __name__ == "__main__":
    main()
