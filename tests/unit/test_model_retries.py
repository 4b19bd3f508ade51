"""The shared retry policy, through each backend's real client over HTTP against loopback
servers: a throttle then an answer, Retry-After honoured, the deadline respected, a failing
server failed after a few quick attempts, malformed answers not retried; and the policy's
backoff and retry budget themselves."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import boto3
import pytest

from exchanges import exchange
from loopback.bedrock_server import BedrockServer
from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer, completion
from memorybot.adapters.bedrock import BedrockConverse, BedrockDecisionModel, bedrock_client
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.openai_chat import OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.adapters.retry import (
    Retrier,
    Retryable,
    RetryBudget,
    RetryPolicy,
    Throttled,
    Transient,
    retry_after_seconds,
)
from memorybot.config import Settings
from memorybot.core.record.ports import ModelError, ModelFailed, ModelUnavailable

EXCHANGE = exchange(("alice", "I moved to Osaka last month"))
MODEL_ID = "test-model"
POLICY = RetryPolicy(deadline_seconds=2.0, base_delay=0.01, max_delay=0.05, max_attempts=6)
SETTINGS = Settings(table_names={}, model_timeout_seconds=1.0)


class SteppedClock:
    """A monotonic clock that moves only by the waits asked of it (and remembers them)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


class RecordingSleep:
    """Really sleeps, and remembers each wait the retrier chose."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)


def _bedrock_answer(p: float) -> dict:
    content = [{"toolUse": {"toolUseId": "t1", "name": "answer_worth", "input": {"probability": p}}}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


class Backend:
    """One backend under test: its loopback server, how to script it, how to ask it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.server = {"jev": JevServer, "openai": OpenAIServer, "bedrock": BedrockServer}[name]()

    @property
    def path(self) -> str:
        return {
            "jev": "/worth",
            "openai": OpenAIServer.COMPLETIONS_PATH,
            "bedrock": BedrockServer.converse_path(MODEL_ID),
        }[self.name]

    def good(self, p: float = 0.7) -> dict:
        if self.name == "jev":
            return {"probability": p}
        if self.name == "openai":
            return completion(f'{{"probability": {p}}}')
        return _bedrock_answer(p)

    def throttle(self, *, retry_after: str | None = None, status: int = 429) -> dict:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        if self.name == "bedrock":
            code = {429: "ThrottlingException", 503: "ServiceUnavailableException", 500: "InternalServerException"}[
                status
            ]
            headers["x-amzn-ErrorType"] = code
        return {"status": status, "body": {"message": "busy"}, "headers": headers}

    def model(self, retrier: Retrier, timeout: float = 1.0):
        if self.name == "jev":
            return JevHttpDecisionModel(self.server.url, timeout_seconds=timeout, retrier=retrier)
        if self.name == "openai":
            return OpenAIDecisionModel(
                OpenAICompatibleClient(self.server.url, "m", timeout_seconds=timeout, retrier=retrier)
            )
        session = boto3.Session(aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1")
        settings = Settings(table_names={}, model_timeout_seconds=timeout)
        client = bedrock_client(settings, session=session, endpoint_url=self.server.url)
        return BedrockDecisionModel(BedrockConverse(client, MODEL_ID, retrier))

    def warm_model(self, retrier: Retrier, timeout: float = 1.0):
        """A model that has answered once, then a server with a clean slate: a client's first call
        does one-time work (botocore resolves its endpoint rules), which is no part of a deadline."""
        model = self.model(retrier, timeout)
        self.server.answer_once(self.path, self.good())
        model.worth(EXCHANGE)
        self.server.clear()
        return model


@pytest.fixture(params=["jev", "openai", "bedrock"])
def backend(request):
    b = Backend(request.param)
    with b.server:
        yield b


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_throttle_or_server_error_then_an_answer(backend, status):
    backend.server.answer_once(backend.path, **backend.throttle(status=status))
    backend.server.answer(backend.path, backend.good(0.7))
    sleep = RecordingSleep()
    assert backend.model(Retrier(POLICY, sleep=sleep)).worth(EXCHANGE) == 0.7
    assert len(backend.server.requests) == 2 and len(sleep.waits) == 1


def test_retry_after_is_honoured(backend):
    backend.server.answer_once(backend.path, **backend.throttle(retry_after="0.3"))
    backend.server.answer(backend.path, backend.good(0.4))
    sleep = RecordingSleep()
    started = time.monotonic()
    assert backend.model(Retrier(POLICY, sleep=sleep)).worth(EXCHANGE) == 0.4
    assert sleep.waits[0] >= 0.3  # never sooner than the server asked, though the backoff alone is < 0.05
    assert time.monotonic() - started >= 0.3


def test_a_retry_after_beyond_the_deadline_gives_up_at_once(backend):
    sleep = RecordingSleep()
    model = backend.warm_model(Retrier(POLICY, sleep=sleep))
    backend.server.answer(backend.path, **backend.throttle(retry_after="30"))
    with pytest.raises(ModelUnavailable):
        model.worth(EXCHANGE)
    assert sleep.waits == [] and len(backend.server.requests) == 1  # no wait at all, not the 30 s asked


def test_a_throttle_that_lasts_is_unavailable_within_the_deadline(backend):
    policy = RetryPolicy(deadline_seconds=0.5, base_delay=0.05, max_delay=0.1, max_attempts=100)
    clock = SteppedClock()  # moves only when the retrier waits: the count below is the policy's
    model = backend.warm_model(Retrier(policy, clock=clock, sleep=clock.sleep, draw=lambda: 1.0))
    backend.server.answer(backend.path, **backend.throttle())
    with pytest.raises(ModelUnavailable):
        model.worth(EXCHANGE)
    # Backoffs of 0.05 s, then the 0.1 s cap: attempts at 0, 0.05, 0.15, 0.25, 0.35 and 0.45 s; the
    # next would start past the deadline, so none is made (a retrier that ignored the deadline would
    # go on to its 100 attempts).
    assert clock.waits == pytest.approx([0.05, 0.1, 0.1, 0.1, 0.1])
    assert len(backend.server.requests) == 6


def test_a_slow_model_fails_after_three_attempts(backend):
    # Was "retried while the deadline allows, then unavailable": a timeout is not a throttle, so
    # it gets a few quick retries and then the call has failed ("no answer", not "not yet").
    policy = RetryPolicy(deadline_seconds=5.0, base_delay=0.01, max_delay=0.02, max_attempts=100)
    model = backend.warm_model(Retrier(policy), timeout=0.1)
    backend.server.set_delay(0.3)
    backend.server.answer(backend.path, backend.good())
    with pytest.raises(ModelFailed, match="timed out|Timeout"):
        model.worth(EXCHANGE)
    assert len(backend.server.requests) == 3  # three 0.1 s timeouts, not retried to the 5 s deadline


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_server_error_that_lasts_fails_after_three_attempts(backend, status):
    if backend.name == "bedrock" and status in (502, 504):
        pytest.skip("Bedrock names its errors: InternalServerException (500), ServiceUnavailableException (503)")
    model = backend.warm_model(Retrier(POLICY))
    backend.server.answer(backend.path, **backend.throttle(status=status))
    with pytest.raises(ModelFailed) as caught:
        model.worth(EXCHANGE)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(backend.server.requests) == 3


def test_a_server_error_with_retry_after_is_a_throttle(backend):
    # Bounded by attempts, not by a short deadline, so a busy machine's slow requests cannot make
    # it stop before the transient limit (3) would have: five attempts, all of them made.
    policy = RetryPolicy(deadline_seconds=30, base_delay=0.01, max_delay=0.02, max_attempts=5)
    model = backend.warm_model(Retrier(policy))
    backend.server.answer(backend.path, **backend.throttle(status=503, retry_after="0"))
    with pytest.raises(ModelUnavailable):  # the server said when to come back: "not yet"
        model.worth(EXCHANGE)
    assert len(backend.server.requests) == 5  # past the transient limit of 3: a throttle, not a failure


@pytest.mark.parametrize("answer", [{"probability": 1.5}, {"probability": "0.7"}, {"nope": 1}])
def test_a_malformed_or_out_of_range_answer_is_not_retried(backend, answer):
    if backend.name == "jev":
        body = answer
    elif backend.name == "openai":
        import json

        body = completion(json.dumps(answer))
    else:
        body = _bedrock_answer(0.5)
        body["output"]["message"]["content"][0]["toolUse"]["input"] = answer
    backend.server.answer(backend.path, body)
    with pytest.raises(ModelError) as caught:
        backend.model(Retrier(POLICY)).worth(EXCHANGE)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(backend.server.requests) == 1


def test_a_broken_body_is_not_retried(backend):
    backend.server.answer(backend.path, raw=b"{broken")
    with pytest.raises(ModelError) as caught:
        backend.model(Retrier(POLICY)).worth(EXCHANGE)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(backend.server.requests) == 1


def test_an_unreachable_server_fails_after_three_attempts(backend):
    # Was "unavailable" (not yet): a connection that fails is a transient error, not a throttle.
    url_holder = backend.server.url
    backend.server.stop()
    backend.server.url = url_holder
    calls: list[float] = []
    retrier = Retrier(RetryPolicy(deadline_seconds=5.0, base_delay=0.01, max_delay=0.02), sleep=calls.append)
    with pytest.raises(ModelFailed) as caught:
        backend.model(retrier).worth(EXCHANGE)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(calls) == 2  # three attempts, two waits


def test_the_openai_style_retry_after_ms_is_read():
    with OpenAIServer() as llm:
        llm.answer_once(
            llm.COMPLETIONS_PATH, {"error": {}}, status=429, headers={"retry-after-ms": "250", "Retry-After": "1"}
        )
        llm.answer(llm.COMPLETIONS_PATH, completion('{"probability": 0.2}'))
        sleep = RecordingSleep()
        client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=1.0, retrier=Retrier(POLICY, sleep=sleep))
        assert OpenAIDecisionModel(client).worth(EXCHANGE) == 0.2
        assert 0.25 <= sleep.waits[0] < 0.3  # the precise value wins over the rounded one


# ------------------------------------------------------------------ the policy itself


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_backoff_is_capped_exponential_with_full_jitter():
    t = FakeTime()
    policy = RetryPolicy(deadline_seconds=1000, base_delay=0.25, max_delay=2.0, max_attempts=7)
    retrier = Retrier(policy, clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)  # the top of each jitter range

    def always_throttled(_remaining):
        raise Throttled("throttled")

    with pytest.raises(ModelUnavailable, match="after 7 attempt"):
        retrier.call(always_throttled, "test")
    assert t.waits == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    t2 = FakeTime()
    draws = iter([0.5, 0.0, 0.1])
    retrier = Retrier(RetryPolicy(1000, 1.0, 8.0, 4), clock=t2.clock, sleep=t2.sleep, draw=lambda: next(draws))
    with pytest.raises(ModelUnavailable):
        retrier.call(always_throttled, "test")
    assert t2.waits == pytest.approx([0.5, 0.0, 0.4])  # uniform share of 1, 2, 4


def test_each_attempt_gets_the_rest_of_the_deadline():
    t = FakeTime()
    seen: list[float] = []

    def attempt(remaining):
        seen.append(remaining)
        t.now += 3.0  # the attempt itself took 3 s
        raise Throttled("slow")

    retrier = Retrier(RetryPolicy(10.0, 1.0, 1.0, 10), clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)
    with pytest.raises(ModelUnavailable):
        retrier.call(attempt, "test")
    assert seen == [10.0, 6.0, 2.0]  # 0 -> 3 (+1 wait) -> 7 (+1) -> 11 > 10: no fourth attempt


def test_only_retryable_errors_are_retried():
    calls = []

    def attempt(_remaining):
        calls.append(1)
        raise ModelError("bad answer")

    with pytest.raises(ModelError) as caught:
        Retrier(POLICY).call(attempt, "test")
    assert not isinstance(caught.value, ModelUnavailable) and len(calls) == 1


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "40"}, 0.04),
        ({"Retry-After": "-2"}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:05 GMT"}, 5.0),
    ],
)
def test_retry_after_header_forms(headers, expected):
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC).timestamp()
    assert retry_after_seconds(headers, now=lambda: now) == expected


def test_a_transient_error_is_retried_at_most_three_times_within_its_window():
    t = FakeTime()
    attempts: list[float] = []

    def failing(_remaining):
        attempts.append(t.now)
        raise Transient("HTTP 500")

    retrier = Retrier(RetryPolicy(60.0, 1.0, 8.0, 30), clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)
    with pytest.raises(ModelFailed, match="after 3 attempt"):
        retrier.call(failing, "test")
    assert attempts == [0.0, 1.0, 3.0]  # backoff 1 then 2: seconds, not the throttle's 60 s deadline

    def slow_failing(_remaining):
        attempts.append(t.now)
        t.now += 8.0  # a model timeout each time
        raise Transient("timed out", timed_out=True)

    t.now, attempts[:] = 0.0, []
    with pytest.raises(ModelFailed, match="no time left"):
        retrier.call(slow_failing, "test")
    assert attempts == [0.0, 9.0]  # a third attempt would start past the 10 s window


def test_a_plain_retryable_is_transient():
    calls = []

    def attempt(_remaining):
        calls.append(1)
        raise Retryable("unclassified")

    with pytest.raises(ModelFailed):
        Retrier(POLICY, sleep=lambda _s: None).call(attempt, "test")
    assert len(calls) == 3


# ------------------------------------------------------------------ the retry budget


def test_the_budget_pays_retries_and_successes_refill_it():
    budget = RetryBudget(20, retry_cost=5, timeout_cost=10, success_refill=1)
    assert budget.spend() == 5 and budget.spend(timed_out=True) == 10 and budget.tokens == 5
    assert budget.spend(timed_out=True) == 0 and budget.refused == 1  # cannot pay: no retry
    assert budget.spend() == 5 and budget.tokens == 0
    budget.succeeded()  # an answer at the first attempt: one token back
    assert budget.tokens == 1
    budget.succeeded(last_retry_cost=10)  # an answer after a retry: that retry's cost back
    assert budget.tokens == 11
    for _ in range(30):
        budget.succeeded()
    assert budget.tokens == 20  # never above capacity


def test_an_empty_budget_means_one_attempt_per_call_until_successes_refill_it():
    t = FakeTime()
    budget = RetryBudget(10, retry_cost=5, timeout_cost=10, success_refill=1)
    retrier = Retrier(RetryPolicy(60.0, 0.1, 1.0, 30), budget=budget, clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)
    server = {"down": True, "attempts": 0}

    def attempt(_remaining):
        server["attempts"] += 1
        if server["down"]:
            raise Transient("HTTP 503")
        return "ok"

    with pytest.raises(ModelFailed, match="after 3 attempt"):
        retrier.call(attempt, "first")  # two retries: the whole budget
    assert server["attempts"] == 3 and budget.tokens == 0
    for _ in range(4):
        with pytest.raises(ModelFailed, match="budget"):
            retrier.call(attempt, "later")
    assert server["attempts"] == 3 + 4  # one attempt each: the service that is down is not hammered
    server["down"] = False
    for _ in range(5):
        assert retrier.call(attempt, "back") == "ok"
    assert budget.tokens == 5  # five first-attempt successes earn one retry back
    server["down"] = True
    with pytest.raises(ModelFailed, match="budget"):
        retrier.call(attempt, "once more")
    assert budget.tokens == 0


def test_throttle_retries_are_not_charged():
    t = FakeTime()
    budget = RetryBudget(5, retry_cost=5)
    retrier = Retrier(RetryPolicy(60.0, 0.1, 1.0, 30), budget=budget, clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)
    answers = iter([Throttled("429"), Throttled("429"), Throttled("429"), "ok"])

    def attempt(_remaining):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert retrier.call(attempt, "throttled") == "ok"
    assert budget.tokens == 5 and budget.refused == 0


def test_a_success_after_a_retry_gives_its_cost_back():
    t = FakeTime()
    budget = RetryBudget(100, retry_cost=5)
    retrier = Retrier(RetryPolicy(60.0, 0.1, 1.0, 30), budget=budget, clock=t.clock, sleep=t.sleep, draw=lambda: 1.0)
    answers = iter([Transient("500"), "ok"])

    def attempt(_remaining):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    budget.spend()  # someone else's retry: 95 left
    assert retrier.call(attempt, "flaky") == "ok"
    assert budget.tokens == 95
