"""The metrics port and its adapters: the embedded-metric-format lines, the model meter (requests,
the providers' token counts, latency, estimated cost, throttles and retries), the prices, and
what a turn and a night add up to."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest

from memorybot.adapters.bedrock import BedrockConverse, BedrockDecisionModel
from memorybot.adapters.metering import ModelMeter
from memorybot.adapters.metrics import EmfMetrics
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient
from memorybot.adapters.retry import Retrier, RetryPolicy, Throttled, Transient
from memorybot.config import DEFAULT_MODEL_PRICES, Settings
from memorybot.core.night.window import next_run_time, window_for
from memorybot.core.record import metrics as names
from memorybot.core.record.changes import NightlyRun, RunSummary
from memorybot.core.record.domain import Exchange, Message, Speaker
from memorybot.core.record.ports import ModelError
from memorybot.handlers import measured

HAIKU = "anthropic.claude-3-haiku-20240307-v1:0"


class Recording:
    """The Metrics port, keeping what it was given (unit tests fake our own ports)."""

    def __init__(self) -> None:
        self.added: list[tuple[str, float, str, str, str]] = []
        self.flushed = 0

    def add(self, name: str, value: float = 1.0, *, unit: str = "Count", purpose: str = "", model: str = "") -> None:
        self.added.append((name, value, unit, purpose, model))

    def flush(self) -> None:
        self.flushed += 1

    def total(self, name: str, purpose: str | None = None) -> float:
        return sum(v for n, v, _, p, _ in self.added if n == name and (purpose is None or p == purpose))


def lines_of(metrics: EmfMetrics) -> list[dict]:
    written: list[str] = []
    metrics._write = written.append
    metrics.flush()
    return [json.loads(line) for line in written]


def test_one_line_per_dimension_set_counts_summed_timings_kept():
    metrics = EmfMetrics("MemoryBot", "memorybot", "Extraction")
    metrics.add(names.TURNS)
    metrics.add(names.TURNS)
    metrics.add(names.MODEL_REQUESTS, purpose="worth", model=HAIKU)
    metrics.add(names.MODEL_LATENCY, 12.5, unit="Milliseconds", purpose="worth", model=HAIKU)
    metrics.add(names.MODEL_LATENCY, 30.0, unit="Milliseconds", purpose="worth", model=HAIKU)
    lines = lines_of(metrics)
    assert len(lines) == 2
    plain, model = sorted(lines, key=lambda line: "purpose" in line)
    assert plain["Turns"] == [2.0] and plain["function"] == "Extraction" and plain["service"] == "memorybot"
    [directive] = plain["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "MemoryBot" and set(directive["Dimensions"][0]) == {"function", "service"}
    assert model["ModelLatency"] == [12.5, 30.0] and model["ModelRequests"] == [1.0]
    assert (model["purpose"], model["model"]) == ("worth", HAIKU)
    [directive] = model["_aws"]["CloudWatchMetrics"]
    assert set(directive["Dimensions"][0]) == {"function", "service", "purpose", "model"}
    assert lines_of(metrics) == []  # flushed: nothing is written twice


def test_more_than_a_hundred_values_are_written_over_several_lines():
    metrics = EmfMetrics("MemoryBot", "memorybot", "NightlySpeaker")
    for ms in range(250):
        metrics.add(names.MODEL_LATENCY, ms, unit="Milliseconds", purpose="decide", model=HAIKU)
    metrics.add(names.MODEL_REQUESTS, 250, purpose="decide", model=HAIKU)
    lines = lines_of(metrics)
    assert [len(line["ModelLatency"]) for line in lines] == [99, 99, 52]
    assert sorted(v for line in lines for v in line["ModelLatency"]) == [float(ms) for ms in range(250)]
    assert sum(v for line in lines for v in line.get("ModelRequests", [])) == 250


def test_the_meter_counts_an_answered_call_with_its_usage_latency_and_cost():
    recorded = Recording()
    meter = ModelMeter(recorded, {HAIKU: (0.25, 1.25)})
    with meter.call("decide", HAIKU) as call:
        call.usage(1000, 200)
    assert recorded.total(names.MODEL_REQUESTS, "decide") == 1
    assert recorded.total(names.INPUT_TOKENS) == 1000 and recorded.total(names.OUTPUT_TOKENS) == 200
    assert recorded.total(names.ESTIMATED_COST) == pytest.approx((1000 * 0.25 + 200 * 1.25) / 1e6)
    [(_, latency, unit, _, _)] = [a for a in recorded.added if a[0] == names.MODEL_LATENCY]
    assert unit == "Milliseconds" and 0 <= latency < 1000


def test_a_call_that_fails_is_no_request_and_odd_usage_counts_nothing():
    recorded = Recording()
    meter = ModelMeter(recorded, dict(DEFAULT_MODEL_PRICES))
    with pytest.raises(ModelError), meter.call("worth", HAIKU):
        raise ModelError("no answer")
    assert recorded.added == []
    with meter.call("worth", "some-unpriced-model") as call:
        call.usage(True, -3)  # neither is a count
    assert recorded.total(names.INPUT_TOKENS) == 0 == recorded.total(names.OUTPUT_TOKENS)
    assert not any(a[0] == names.ESTIMATED_COST for a in recorded.added)  # no price, no estimate


def test_an_inference_profile_is_priced_as_its_base_model():
    meter = ModelMeter(Recording(), dict(DEFAULT_MODEL_PRICES))
    assert meter.price_of(f"us.{HAIKU}") == DEFAULT_MODEL_PRICES[HAIKU]


def test_throttles_and_retries_are_counted_for_the_call_in_progress():
    recorded = Recording()
    meter = ModelMeter(recorded)
    failures = [Throttled("429"), Throttled("429"), Transient("503")]

    def attempt(_remaining: float) -> str:
        if failures:
            raise failures.pop(0)
        return "answer"

    retrier = Retrier(RetryPolicy(), sleep=lambda _s: None, draw=lambda: 0.0, meter=meter)
    with meter.call("write", HAIKU):
        assert retrier.call(attempt, "test") == "answer"
    assert recorded.total(names.MODEL_THROTTLES, "write") == 2
    assert recorded.total(names.MODEL_RETRIES, "write") == 3
    assert recorded.total(names.MODEL_REQUESTS, "write") == 1


class ConverseClient:
    """boto3's bedrock-runtime client as far as ``converse`` goes."""

    def __init__(self, usage: object) -> None:
        self.usage = usage

    def converse(self, **request: object) -> dict:
        tool = request["toolConfig"]["toolChoice"]["tool"]["name"]  # type: ignore[index]
        content = [{"toolUse": {"name": tool, "input": {"probability": 0.7}}}]
        return {"output": {"message": {"content": content}}, "stopReason": "tool_use", "usage": self.usage}


def exchange() -> Exchange:
    speaker = Speaker("100000000000000001", "ren")
    line = Message(
        "200000000000000001",
        "300000000000000001",
        speaker.user_id,
        "ren",
        "I grow tomatoes",
        scope="guild:1",
        conversation_of=speaker.user_id,
    )
    made = Exchange.of(speaker, "guild:1", [line])
    assert made is not None
    return made


def test_bedrock_converse_usage_fields_are_the_tokens():
    recorded = Recording()
    meter = ModelMeter(recorded, dict(DEFAULT_MODEL_PRICES))
    model = BedrockDecisionModel(
        BedrockConverse(ConverseClient({"inputTokens": 321, "outputTokens": 12}), HAIKU, meter=meter)
    )
    assert model.worth(exchange()) == pytest.approx(0.7)
    assert recorded.total(names.INPUT_TOKENS, "worth") == 321 and recorded.total(names.OUTPUT_TOKENS, "worth") == 12
    assert {a[4] for a in recorded.added} == {HAIKU}


def test_openai_compatible_usage_fields_are_the_tokens():
    recorded = Recording()

    def answer(request: httpx.Request) -> httpx.Response:
        body = {
            "choices": [{"message": {"content": "ren grows tomatoes"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 55, "completion_tokens": 4},
        }
        return httpx.Response(200, json=body)

    retrier = Retrier(meter=ModelMeter(recorded, dict(DEFAULT_MODEL_PRICES)))
    client = OpenAICompatibleClient(
        "http://loopback.invalid/v1",
        "gpt-4o-mini",
        timeout_seconds=5,
        transport=httpx.MockTransport(answer),
        retrier=retrier,
    )
    OpenAIChatModel(client).write_diary("a day of talk")
    assert recorded.total(names.MODEL_REQUESTS, "diary") == 1
    assert recorded.total(names.INPUT_TOKENS, "diary") == 55 and recorded.total(names.OUTPUT_TOKENS, "diary") == 4
    assert recorded.total(names.ESTIMATED_COST) == pytest.approx((55 * 0.15 + 4 * 0.60) / 1e6)


def test_the_prices_and_the_function_come_from_the_settings():
    settings = Settings.from_env({"MEMORYBOT_MODEL_PRICES": '{"my-model": [1, 2]}'})
    meter = ModelMeter(Recording(), settings.model_prices)
    assert meter.price_of("my-model") == (1.0, 2.0) == settings.price("my-model")
    assert meter.price_of(HAIKU) == DEFAULT_MODEL_PRICES[HAIKU]
    assert Settings.from_env({}).function_name == "local"
    assert Settings.from_env({"MEMORYBOT_FUNCTION": "Reply"}).function_name == "Reply"


def test_a_turn_counts_its_outcome_and_a_night_its_record():
    recorded = Recording()
    names.record_turn(recorded, "not_worth")
    names.record_turn(recorded, "no_exchange")  # no outcome metric
    assert [a[0] for a in recorded.added] == ["TurnsNotWorth"]
    summary = RunSummary(added=["a", "b"], decayed=["c"], speakers=3, chunks=7, reviews=4, failed_speakers=["x"])
    run = NightlyRun(1, "2026-12-01", datetime(2026, 12, 1, 18, tzinfo=UTC), diary="a quiet day", summary=summary)
    night = Recording()
    names.record_night(night, run)
    assert {n: night.total(n) for n in {a[0] for a in night.added}} == {
        "NightRuns": 1,
        "NightSpeakers": 3,
        "NightFailedSpeakers": 1,
        "NightChunks": 7,
        "NightReviews": 4,
        "NightDiaries": 1,
        "MemoriesAdded": 2,
        "MemoriesDecayed": 1,
    }


class Broken(Recording):
    def flush(self) -> None:
        raise OSError("stdout closed")


class Holder:
    def __init__(self, metrics: Recording) -> None:
        self.metrics = metrics
        self.settings = Settings.from_env({})


def test_an_invocation_writes_its_metrics_even_when_it_fails_and_a_metric_never_fails_it():
    holder = Holder(Recording())
    with pytest.raises(RuntimeError), measured(holder, traced=False):  # type: ignore[arg-type]
        raise RuntimeError("the job failed")
    assert holder.metrics.flushed == 1
    with measured(Holder(Broken()), traced=False):  # type: ignore[arg-type]
        pass


def test_the_night_is_03_00_in_the_zone_over_the_24_real_hours_before_it():
    new_york = ZoneInfo("America/New_York")
    # The morning the clocks go forward: 03:00 EDT is 07:00 UTC, the window starts 02:00 EST the day before.
    window = window_for(datetime(2026, 3, 8, 12, tzinfo=UTC), new_york)
    assert window.end == datetime(2026, 3, 8, 7, tzinfo=UTC)
    assert window.end - window.start == timedelta(hours=24) and window.day_label == "2026-03-07"
    assert next_run_time(datetime(2026, 3, 8, 6, 59, tzinfo=UTC), new_york) == datetime(2026, 3, 8, 7, tzinfo=UTC)
    assert next_run_time(datetime(2026, 3, 8, 7, tzinfo=UTC), new_york) == datetime(2026, 3, 9, 7, tzinfo=UTC)
    tokyo = window_for(datetime(2026, 12, 2, 1, tzinfo=UTC))  # JST by default: 03:00 JST is 18:00 UTC
    assert tokyo.end == datetime(2026, 12, 1, 18, tzinfo=UTC) and tokyo.day_label == "2026-12-01"


def test_a_forgotten_memory_is_counted_once_and_a_refused_forget_not_at_all(front):
    from frontdoor import ALICE, BOB, context, event, forget, seed
    from memorybot.handlers.interactions import handler

    recorded = Recording()
    front.__dict__["metrics"] = recorded  # the container's metrics port, as an override is given
    seed(front.memory_store, ALICE, "abcde", "likes green tea")
    seed(front.memory_store, BOB, "bcdef", "likes black tea")
    handler(event(forget("bcdef", user=ALICE)), context())  # Bob's: not found for Alice
    assert recorded.total(names.MEMORIES_FORGOTTEN) == 0 and recorded.flushed == 1
    handler(event(forget("abcde", user=ALICE)), context())
    assert recorded.added == [(names.MEMORIES_FORGOTTEN, 1, "Count", "", "")] and recorded.flushed == 2


def test_a_forget_all_counts_what_its_job_forgot_in_the_extraction_function(front):
    from frontdoor import ALICE, click, context, event, seed
    from memorybot.discord.requests import forget_all_button
    from memorybot.handlers import extraction
    from memorybot.handlers.interactions import handler

    recorded = Recording()
    front.__dict__["metrics"] = recorded
    seed(front.memory_store, ALICE, "abcde", "likes green tea")
    seed(front.memory_store, ALICE, "bcdef", "likes black tea")
    handler(event(click(forget_all_button(ALICE, datetime.now(UTC)))), context())
    assert recorded.total(names.MEMORIES_FORGOTTEN) == 0  # the confirmation only hands the deletes on
    [(_, job)] = front.invoker.calls
    extraction.handler(job, context("memorybot-extraction"))
    assert recorded.total(names.MEMORIES_FORGOTTEN) == 2
