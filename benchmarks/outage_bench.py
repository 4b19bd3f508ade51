"""Model calls and Lambda-seconds per turn during a 15-minute model outage, before and after.

The model: Jev over HTTP (``JevHttpDecisionModel``, the real adapter and retry loop) against a
loopback Jev that answers 503 to every question while the outage lasts (OUTAGE_SECONDS), and
normally after it. A turn arrives every TURN_EVERY seconds of the outage; each is the extraction
worker's job (``Extractor`` on a 3-memory profile) run as Lambda runs an asynchronous
invocation: a job that raises ModelUnavailable ("not yet") is invoked again 1 minute after it
failed, then 2 minutes after that (Lambda's two async retries); when the last one is still
"not yet", its decisions are lost (the worker's DecisionsLost). Lambda-seconds are the worker's
wall time per invocation, summed over a turn's invocations.

Time is scaled: every wait the retry policy chooses (backoff, Retry-After) is slept 1/SCALE of
its length and counted in full on a simulated clock, which also decides when the outage ends;
the HTTP round trips are real (loopback, the 503 answered at once). Invocations run one at a
time in simulated-time order.

Policies:
- before: the old policy from its old parameters: every 5xx retried like a throttle until the
  60 s deadline (base 0.25 s, cap 10 s, full jitter, 30 attempts at most), then "not yet"
  (``OldRetrier``: a call that failed is re-raised as ModelUnavailable, as it was), no budget.
- after: the deployed policy (``RetryPolicy()``): 3 attempts within 10 s, then failed; the
  turn's "worth" failing is "not yet". Two cases for the retry budget: one warm instance whose
  budget every invocation shares (the SDKs' per-client bucket in a reused container), and a
  fresh instance (a full bucket) for every invocation.
"""

from __future__ import annotations

import heapq
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.retry import Retrier, RetryBudget, RetryPolicy
from memorybot.core.record.domain import GLOBAL_SCOPE
from memorybot.core.record.ports import ModelFailed, ModelUnavailable
from memorybot.core.turn.extraction import Extractor, Outcome
from tests.fakes import FakeMemoryStore, ScriptedChat, memory, message, speaker
from tests.loopback import Answer, Recorded
from tests.loopback.jev_server import JevServer

T = TypeVar("T")

SCALE = 1000  # waits are slept 1/SCALE of their length
OUTAGE_SECONDS = 15 * 60
TURN_EVERY = 30  # a turn every 30 s of the outage: 30 turns
LAMBDA_RETRY_DELAYS = (60, 120)  # Lambda's async retries: 1 minute, then 2 minutes after a failure
OLD_POLICY = RetryPolicy(
    deadline_seconds=60.0,
    base_delay=0.25,
    max_delay=10.0,
    max_attempts=30,
    transient_attempts=30,
    transient_window_seconds=60.0,
)
NEW_POLICY = RetryPolicy()


class SimulatedClock:
    """Real time for work, waits counted in full but slept 1/SCALE."""

    def __init__(self) -> None:
        self.start_at(0.0)

    def start_at(self, at: float) -> None:
        self._base = at
        self._real = time.monotonic()
        self._skipped = 0.0

    def now(self) -> float:
        return self._base + (time.monotonic() - self._real) + self._skipped

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds / SCALE)
        self._skipped += seconds - seconds / SCALE


class OutageJev(JevServer):
    """503 to every question while the simulated clock is inside the outage."""

    def __init__(self, clock: SimulatedClock) -> None:
        super().__init__(worth=0.9, add=0.9, verdict="keep")
        self.clock = clock

    def default_answer(self, request: Recorded) -> Answer:
        if self.clock.now() < OUTAGE_SECONDS:
            return Answer(503, {"error": "service unavailable"})
        return super().default_answer(request)


class OldRetrier(Retrier):
    """The old rule: a server error that lasted through the deadline was "not yet", like a throttle."""

    def call(self, attempt: Callable[[float], T], what: str) -> T:
        try:
            return super().call(attempt, what)
        except ModelFailed as exc:
            raise ModelUnavailable(str(exc)) from exc


@dataclass
class Turn:
    arrived: float
    calls: int = 0
    lambda_seconds: float = 0.0
    invocations: int = 0
    outcome: str = ""


@dataclass(order=True)
class Invocation:
    at: float
    turn: int = field(compare=False)
    attempt: int = field(compare=False)  # 0: the first; 1, 2: Lambda's retries


def simulate(name: str, make_retrier: Callable[[SimulatedClock], Retrier]) -> list[Turn]:
    clock = SimulatedClock()
    turns = [Turn(float(at)) for at in range(0, OUTAGE_SECONDS, TURN_EVERY)]
    queue = [Invocation(t.arrived, n, 0) for n, t in enumerate(turns)]
    heapq.heapify(queue)
    with OutageJev(clock) as jev:
        while queue:
            inv = heapq.heappop(queue)
            turn = turns[inv.turn]
            user = f"u{inv.turn}"
            store = FakeMemoryStore()
            store.seed(*(memory(user, f"m{inv.turn:03d}{k}"[-5:], f"fact {k}") for k in range(3)))
            chat = ScriptedChat()
            model = JevHttpDecisionModel(jev.url, timeout_seconds=8.0, retrier=make_retrier(clock))
            extractor = Extractor(store, model, chat)
            before = len(jev.requests)
            clock.start_at(inv.at)
            try:
                result = extractor.run(speaker(user), GLOBAL_SCOPE, [message(user, "I started learning the cello")])
                turn.outcome = _applied(result.outcome, inv.attempt)
            except ModelUnavailable:
                if inv.attempt < len(LAMBDA_RETRY_DELAYS):
                    heapq.heappush(
                        queue, Invocation(clock.now() + LAMBDA_RETRY_DELAYS[inv.attempt], inv.turn, inv.attempt + 1)
                    )
                else:
                    turn.outcome = "decisions lost"
            finally:
                turn.lambda_seconds += clock.now() - inv.at
                turn.calls += len(jev.requests) - before + len(chat.seen)
                turn.invocations += 1
                model.close()
    return turns


def _applied(outcome: Outcome, attempt: int) -> str:
    when = "at once" if attempt == 0 else f"on Lambda retry {attempt}"
    return f"{outcome.value} {when}"


def main() -> None:
    logging.disable(logging.WARNING)  # one warning per failed call: thousands of lines
    try:
        _main()
    finally:
        logging.disable(logging.NOTSET)


def _main() -> None:
    shared = RetryBudget()
    cases: list[tuple[str, Callable[[SimulatedClock], Any]]] = [
        ("before (60 s, 5xx = not yet)", lambda c: OldRetrier(OLD_POLICY, clock=c.now, sleep=c.sleep)),
        ("after, one warm instance", lambda c: Retrier(NEW_POLICY, budget=shared, clock=c.now, sleep=c.sleep)),
        ("after, fresh instance each", lambda c: Retrier(NEW_POLICY, budget=RetryBudget(), clock=c.now, sleep=c.sleep)),
    ]
    print(
        f"A {OUTAGE_SECONDS // 60}-minute outage (Jev answers 503), a turn every {TURN_EVERY} s "
        f"({OUTAGE_SECONDS // TURN_EVERY} turns); waits slept at 1/{SCALE} and counted in full; "
        f"Lambda async retries after {LAMBDA_RETRY_DELAYS[0]} s and {LAMBDA_RETRY_DELAYS[1]} s"
    )
    print(f"{'policy':32} {'calls/turn':>10} {'max':>5} {'Lambda-s/turn':>13} {'max':>7} {'invocations':>11}  outcomes")
    for name, make in cases:
        started = time.monotonic()
        turns = simulate(name, make)
        outcomes: dict[str, int] = {}
        for t in turns:
            outcomes[t.outcome] = outcomes.get(t.outcome, 0) + 1
        print(
            f"{name:32} {statistics.mean(t.calls for t in turns):>10.1f} {max(t.calls for t in turns):>5} "
            f"{statistics.mean(t.lambda_seconds for t in turns):>13.1f} {max(t.lambda_seconds for t in turns):>7.1f} "
            f"{sum(t.invocations for t in turns):>11}  "
            + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
            + f"  [{time.monotonic() - started:.1f} s real]"
        )
    print(
        f"after, one warm instance: retry budget {shared.capacity} tokens, {shared.retry_cost} a retry "
        f"({shared.timeout_cost} after a timeout), {shared.success_refill} back per success; "
        f"{shared.refused} retries refused for want of tokens, {shared.tokens} tokens left"
    )
