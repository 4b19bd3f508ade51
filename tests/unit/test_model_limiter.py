"""The process's model limiter under real threads: calls in flight never above the bound, starts
never above the per-minute bound (a shrunken minute keeps the tests short), HTTP pools as large
as the bound, and one limiter shared by every backend the process builds."""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from exchanges import exchange
from fakes import FakeMemoryStore, memory, message, speaker
from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.limiter import LimiterTimeout, ModelCallLimiter, process_limiter
from memorybot.adapters.models import build_chat_model, build_decision_model
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import Retrier, RetryPolicy
from memorybot.config import Settings
from memorybot.core.record.domain import GLOBAL_SCOPE
from memorybot.core.turn.extraction import Extractor

EXCHANGE = exchange(("alice", "I moved to Osaka"))


def test_calls_in_flight_never_exceed_the_bound():
    limiter = ModelCallLimiter(5)
    inside, peak, lock = [0], [0], threading.Lock()
    full = threading.Event()  # the first five hold their slots until all five are in: the bound is reached

    def call(_):
        with limiter.slot():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
                if inside[0] == 5:
                    full.set()
            full.wait(timeout=30)
            time.sleep(0.001)
            with lock:
                inside[0] -= 1

    with ThreadPoolExecutor(40) as pool:
        list(pool.map(call, range(200)))
    assert peak[0] == 5 and limiter.peak_in_flight == 5 and limiter.in_flight == 0


def test_concurrent_starts_queue_one_behind_another():
    """Threads reserving at the same instant each get a start of their own: the burst at once,
    then one per 1/rate, none twice. The clock stands still (its sleep only records the wait), so
    what is checked is the reservation under the lock, not the scheduler's timing."""
    period, per_minute = 1.0, 120  # burst 2, then 118 a period
    waits, lock = [], threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            waits.append(seconds)

    limiter = ModelCallLimiter(8, per_minute, period=period, clock=lambda: 100.0, sleep=sleep)

    def call(_):
        with limiter.slot():
            pass

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(call, range(50)))
    rate = (per_minute - 2) / period
    # The burst's two start without waiting; the other 48 waited 1, 2, ... 48 steps of 1/rate.
    assert sorted(waits) == pytest.approx([k / rate for k in range(1, 49)])
    assert limiter.started == 50 and limiter.in_flight == 0


def test_the_limiter_keeps_a_process_under_the_providers_quota():
    quota, period = 240, 1.0  # per (shrunken) minute
    with JevServer() as jev:
        jev.set_quota(quota, period=period)
        jev.set_delay(0.005)
        limiter = ModelCallLimiter(16, quota, period=period)
        model = JevHttpDecisionModel(
            jev.url,
            timeout_seconds=2.0,
            max_connections=16,
            retrier=Retrier(RetryPolicy(deadline_seconds=5.0), limiter),
        )
        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(lambda _: model.worth(EXCHANGE), range(300)))
        assert answers == [0.9] * 300 and jev.served == 300
        # Every request the provider saw took a slot first (its answers and its refusals alike),
        # and never more at once than the bound. How rarely a paced process is turned away depends
        # on how busy the machine's scheduler is, so it is a figure of the quota benchmark
        # (benchmarks/quota_bench.py prints it), not a bound here; the pacing itself is pinned on a
        # clock the test controls (test_the_per_minute_bound_paces_starts_exactly).
        assert limiter.started == jev.served + jev.throttled
        assert limiter.peak_in_flight <= 16


def test_the_per_minute_bound_paces_starts_exactly():
    """The token bucket on a clock that moves only when the limiter waits: a burst of one
    second's worth, then one start every 1/rate seconds, and never more than the bound in any
    window of the (shrunken) minute."""
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    period, per_minute = 1.0, 120  # burst 2, then 118 a period
    limiter = ModelCallLimiter(4, per_minute, period=period, clock=lambda: now[0], sleep=sleep)
    starts = []
    for _ in range(300):
        with limiter.slot():
            starts.append(now[0])
    rate = (per_minute - 2) / period
    assert starts[:2] == [100.0, 100.0]  # the burst
    gaps = [b - a for a, b in zip(starts[1:], starts[2:], strict=False)]
    assert all(gap == pytest.approx(1 / rate) for gap in gaps)
    busiest = max(sum(1 for s in starts if t <= s < t + period) for t in starts)
    assert busiest <= per_minute
    assert starts[-1] - starts[0] == pytest.approx((300 - 2) / rate)


def test_over_the_quota_the_throttles_are_retried_and_every_call_answered():
    with JevServer() as jev:
        jev.set_quota(120, period=1.0)  # the limiter below believes in a quota five times larger
        limiter = ModelCallLimiter(16, 600, period=1.0)
        model = JevHttpDecisionModel(
            jev.url,
            timeout_seconds=2.0,
            max_connections=16,
            retrier=Retrier(RetryPolicy(deadline_seconds=10.0, base_delay=0.02, max_delay=0.2), limiter),
        )
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: model.worth(EXCHANGE), range(150)))
        assert answers == [0.9] * 150
        assert jev.throttled > 0 and jev.served == 150


def test_the_http_pool_is_as_large_as_the_limiters_bound():
    settings = Settings(table_names={}, decision_model="http", model_max_in_flight=24, model_concurrency=10)
    with JevServer() as jev:
        jev.set_delay(0.3)
        model = JevHttpDecisionModel.from_settings(dataclasses.replace(settings, jev_url=jev.url))
        with ThreadPoolExecutor(48) as pool:
            list(pool.map(lambda _: model.worth(EXCHANGE), range(96)))
        assert 20 <= jev.peak_in_flight <= 24  # never more than the bound, and no hidden cap of 10


def test_every_backend_of_a_process_shares_one_limiter():
    settings = Settings(
        table_names={}, decision_model="openai", chat_model="openai", model_max_in_flight=7, model_rpm=70
    )
    decision, chat = build_decision_model(settings), build_chat_model(settings)
    assert (
        decision._client._service.retrier.limiter is chat._client._service.retrier.limiter is process_limiter(settings)
    )
    assert process_limiter(settings).max_in_flight == 7 and process_limiter(settings).per_minute == 70


def test_a_waiter_with_a_deadline_gives_up():
    limiter = ModelCallLimiter(1)
    with limiter.slot():
        with pytest.raises(LimiterTimeout):
            with limiter.slot(timeout=0.05):
                pass
    with limiter.slot(timeout=0.05):
        pass


@pytest.mark.parametrize("update, requests", [(False, 3), (True, 13)])
def test_the_limiter_counts_every_request_of_a_turn(update, requests):
    """Worth, the one decision and the add's draft (and a rewrite a record when all ten are
    updated) each take a slot: what the limiter started is what the model server served."""
    limiter = ModelCallLimiter(32)
    with OpenAIServer(default_verdict="update" if update else "keep", default_probability=0.9) as llm:
        client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=5.0, retrier=Retrier(limiter=limiter))
        store = FakeMemoryStore()
        store.seed(*(memory("u1", f"m{c}222", f"fact {c}") for c in "abcdefghjk"))
        result = Extractor(store, OpenAIDecisionModel(client), OpenAIChatModel(client)).run(
            speaker("u1", "alice"), GLOBAL_SCOPE, [message("u1", "I moved to Osaka", name="alice")]
        )
        client.close()
        served = len(llm.completions())
    assert len(result.added) == 1 and len(result.updated) == (10 if update else 0)
    assert limiter.started == served == result.model_calls == requests
