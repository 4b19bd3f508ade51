"""Model calls under a quota, through the real adapters over HTTP against a stand-in model.

The stand-in is the loopback OpenAI-compatible server with latency L and a quota of Q
requests per minute (above it: 429 with Retry-After and retry-after-ms). Decisions and texts
both go to it (one model, one quota), through ``OpenAIDecisionModel``/``OpenAIChatModel``,
the shared retry policy and a ``ModelCallLimiter`` configured with RPM = Q.

1. A night: SPEAKERS busy speakers (``MEMORYBOT_BENCH_SPEAKERS``, default 1,000), each with
   six messages inside the night's window (one chunk) and MEMORIES memories (keep all, add one:
   1 worth + 1 decision + 1 text calls), through the nightly state machine's own
   steps (``nightly_steps``): claim, plan (the manifest), then every ``map_items`` payload (a
   ``SpeakerTask``, as the Distributed Map's ItemSelector makes it) through ``speaker``, the
   real per-speaker step (the speaker's lines read by id, newest-first chunks, the extraction
   with actor nightly, the (run, speaker) mark), MAP_CONCURRENCY at a time (the map's
   MaxConcurrency, context ``nightly_max_concurrency``'s default), each as ``map_child``: the
   map's Retry as deployed (``SPEAKER_RETRY``: a step raising ModelUnavailable is run again
   after 30 s x 2^n with full jitter, capped at 5 minutes, up to 4 times, other errors twice;
   the waits scaled down like LAMBDA_RETRY_DELAY) and its Catch (``speaker_failed``); then
   review (the diary) and finish.
   One process and one limiter: every child shares it, as in the in-process run (deployed,
   each child is a Lambda instance with its own). Printed: decisions lost (speakers whose mark
   is failed, missing, or counts model calls without a usable answer), wall ÷ (model calls ÷ Q)
   over the whole night from claim to finish (1.0 is the quota's own floor), peak calls in
   flight (limiter and server) against the configured limit.
2. The live path: LIVE_TURNS /chat turns at once, each its own instance (own limiter, as
   separate Lambda instances are) against the same quota: the reply, then its extraction; an
   extraction that raises ModelUnavailable is run again after LAMBDA_RETRY_DELAY (Lambda's
   async retry, scaled down) up to twice. Printed: decisions lost, the extraction delay
   (reply posted -> extraction applied) p50/p95.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from benchmarks.nightly_bench import PerUserStore
from benchmarks.stand_in import stand_in_client, stand_in_models
from infra.settings import StackConfig
from memorybot.adapters.limiter import ModelCallLimiter
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAIDecisionModel
from memorybot.adapters.retry import RetryPolicy
from memorybot.core.night import nightly_steps
from memorybot.core.night.consolidation import SPEAKER_DONE, Consolidator, speaker_mark
from memorybot.core.night.nightly_jobs import NightlyStart, SpeakerMark
from memorybot.core.night.window import CHUNK_MESSAGES, window_for
from memorybot.core.record.domain import GLOBAL_SCOPE, JST, Actor, Memory, PromptMessage, iso
from memorybot.core.record.ports import ModelUnavailable
from memorybot.core.turn.extraction import Extractor
from tests.fakes import FakeMessageStore, FakeRunStore, message
from tests.fakes import speaker as speaker_named
from tests.loopback.openai_server import OpenAIServer

L = 0.020  # seconds per model call
Q = 12_000  # model requests per minute
MAX_IN_FLIGHT = 32  # MEMORYBOT_MODEL_MAX_IN_FLIGHT
SPEAKERS = int(os.environ.get("MEMORYBOT_BENCH_SPEAKERS", "1000"))
MEMORIES = 5
MAP_CONCURRENCY = StackConfig.nightly_max_concurrency  # the Distributed Map's MaxConcurrency
DEPLOYED_RPM = StackConfig.model_rpm  # 0: no per-minute bound in the instance
# The map's Retry of a speaker's step is nightly_steps.SPEAKER_RETRY, as deployed; its waits are
# scaled down as LAMBDA_RETRY_DELAY is (1/60).
MAP_WAIT_SCALE = 1 / 60
LIVE_TURNS = 100
LAMBDA_RETRY_DELAY = 1.0  # Lambda waits 1 and then 2 minutes; scaled down
POLICY = RetryPolicy(deadline_seconds=60.0)
DAY = datetime(2026, 11, 20, tzinfo=UTC)
NIGHT = datetime(2026, 11, 30, 3, 0, tzinfo=JST)  # the alarm; its window is the 24 hours before


def _backends(url: str, limiter: ModelCallLimiter) -> tuple[OpenAIDecisionModel, OpenAIChatModel]:
    return stand_in_models(stand_in_client(url, limiter, POLICY))


def _seed(store: PerUserStore, speaker: str, at: datetime = DAY + timedelta(hours=10)) -> list:
    for k in range(MEMORIES):
        store.seed(Memory(speaker, f"m{k:04d}", f"fact {k}", DAY, DAY))
    return [message(speaker, f"message {i} about my week", at=at + timedelta(seconds=i)) for i in range(CHUNK_MESSAGES)]


def night(llm: OpenAIServer, *, per_instance: bool = False) -> None:
    """``per_instance``: each map child its own instance, as deployed (its own limiter with the
    deployed defaults: MAX_IN_FLIGHT and no per-minute bound), so only the model's 429s and the
    retries keep the whole map within Q; otherwise one limiter with RPM = Q shared by all."""
    llm.clear()
    llm.set_delay(L)
    llm.set_quota(Q)
    memories, messages, runs = PerUserStore(), FakeMessageStore(), FakeRunStore()
    window = window_for(NIGHT)
    for n in range(SPEAKERS):
        for said in _seed(memories, f"s{n}", at=window.start + timedelta(hours=1, seconds=n * 10)):
            messages.put(said)
    limiter = ModelCallLimiter(MAX_IN_FLIGHT, Q)
    jev, chat = _backends(llm.url, limiter)
    manifests = InMemoryManifests()
    consolidator = Consolidator(
        memories, messages, runs, Extractor(memories, jev, chat), jev, chat, manifests=manifests
    )
    retried: list[float] = []

    def retry_wait(seconds: float) -> None:
        retried.append(seconds)
        time.sleep(seconds * MAP_WAIT_SCALE)

    instances = threading.local()
    limiters: list[ModelCallLimiter] = []

    def child_consolidator() -> Consolidator:
        if not per_instance:
            return consolidator
        if not hasattr(instances, "consolidator"):  # one warm instance per map slot
            own = ModelCallLimiter(MAX_IN_FLIGHT, DEPLOYED_RPM)
            limiters.append(own)
            j, c = _backends(llm.url, own)
            instances.consolidator = Consolidator(
                memories, messages, runs, Extractor(memories, j, c), j, c, manifests=manifests
            )
        return instances.consolidator

    started = time.perf_counter()
    claimed = nightly_steps.claim(consolidator, NightlyStart(iso(NIGHT)))
    planned = nightly_steps.plan(consolidator, claimed)
    items = nightly_steps.map_items(consolidator, planned)
    with ThreadPoolExecutor(MAP_CONCURRENCY) as pool:
        answers = list(pool.map(lambda item: nightly_steps.map_child(child_consolidator(), item, retry_wait), items))
    nightly_steps.review(consolidator, planned)
    nightly_steps.finish(consolidator, planned)
    wall = time.perf_counter() - started

    run = runs.get(planned.run_id)
    assert run is not None and run.finished_at is not None
    marks = [runs.step_mark(planned.run_id, speaker_mark(i.speaker_key), SpeakerMark) for i in items]
    failed = [m for m in marks if m is None or m.status != SPEAKER_DONE]
    no_decision = [m for m in marks if m is not None and m.failures > 0]
    lost = len(failed) + len(no_decision)
    calls = llm.served
    floor = calls / (Q / 60)
    print(
        f"night: {len(items)} speakers through the map's speaker step, 1 chunk and {MEMORIES} memories each; "
        f"L = {L * 1000:.0f} ms, Q = {Q:,}/min, MaxConcurrency {MAP_CONCURRENCY}, "
        + (
            f"each child its own instance: limiter {MAX_IN_FLIGHT} in flight, no per-minute bound (deployed defaults)"
            if per_instance
            else f"one limiter {MAX_IN_FLIGHT} in flight and {Q:,}/min shared by every child"
        )
    )
    print(
        f"  model calls {calls:,}, throttled answers {llm.throttled}, "
        f"calls without a usable answer {sum(m.failures for m in marks if m is not None)}; "
        f"speaker steps run again by the map's Retry {len(retried)}"
    )
    print(
        f"  decisions lost {lost} (goal 0): speakers failed {len(failed)} "
        f"(run record: {len(run.summary.failed_speakers)}), with no decision {len(no_decision)}; "
        f"steps answered done {sum(a.status == SPEAKER_DONE for a in answers)}"
    )
    print(f"  wall {wall:.1f} s; calls / Q = {floor:.1f} s; wall / (calls / Q) = {wall / floor:.2f} (goal <= 1.2)")
    if per_instance:
        peak = max((own.peak_in_flight for own in limiters), default=0)
        print(f"  peak calls in flight: per instance {peak} (limit {MAX_IN_FLIGHT}), server {llm.peak_in_flight}")
    else:
        print(
            f"  peak calls in flight: limiter {limiter.peak_in_flight}, server {llm.peak_in_flight} "
            f"(limit {MAX_IN_FLIGHT})"
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
        night(llm, per_instance=True)
        live(llm)


if __name__ == "__main__":
    main()
