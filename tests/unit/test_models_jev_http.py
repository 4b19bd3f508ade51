"""The http (Jev) decision backend against a real Jev fake on loopback."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timezone

import pytest

from exchanges import BOT_ID, exchange
from fakes import FakeMemoryStore, ScriptedChat, memory, message
from loopback.jev_server import JevServer
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.retry import Retrier, RetryPolicy
from memorybot.core.record.domain import GLOBAL_SCOPE, Memory, Speaker, Verdict, iso
from memorybot.core.record.ports import ModelError, ModelFailed, ModelUnavailable
from memorybot.core.turn.extraction import Extractor
from retrying import quick_retrier

EXCHANGE = exchange(("alice", "I moved to Osaka last month"), ("bot", "Nice!"))
# What every exchange question carries besides its own fields.
EXCHANGE_FIELDS = {
    "speaker": {"id": "u1", "name": "alice"},
    "messages": [
        # each with its own time: its snowflake's, ISO 8601 UTC (the Jev contract's "at")
        {"author_id": "u1", "author_name": "alice", "content": "I moved to Osaka last month", "is_bot": False}
        | {"at": iso(EXCHANGE.messages[0].created_at)},
        {"author_id": BOT_ID, "author_name": "memorybot", "content": "Nice!", "is_bot": True}
        | {"at": iso(EXCHANGE.messages[1].created_at)},
    ],
    "exchange": "alice: I moved to Osaka last month\nmemorybot: Nice!",
}
AT = datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=UTC)
TEA = Memory("u1", "k3x9a", "likes green tea", AT, AT)
CAT = Memory("u1", "m7pq2", "has a cat called Tama", AT, AT)


@pytest.fixture(scope="module")
def _server():
    with JevServer() as server:
        yield server


@pytest.fixture(scope="module")
def _model(_server):
    client = JevHttpDecisionModel(_server.url, timeout_seconds=2.0, api_key="secret-key", retrier=quick_retrier())
    yield client
    client.close()


@pytest.fixture
def jev(_server):
    _server.clear()
    return _server


@pytest.fixture
def model(jev, _model):
    return _model


def test_worth_posts_the_exchange_and_reads_the_probability(jev, model):
    jev.set_worth(0.73)
    assert model.worth(EXCHANGE) == 0.73
    sent = jev.last("/worth")
    assert sent.method == "POST"
    assert sent.json == EXCHANGE_FIELDS
    assert sent.headers["authorization"] == "Bearer secret-key"
    assert sent.headers["content-type"].startswith("application/json")


def test_verdict_sends_the_memory_with_string_id_and_iso_utc_time(jev, model):
    jev.set_verdict("update", memory_id="k3x9a")
    jev.set_verdict("delete", memory_id="m7pq2")
    assert model.verdict(EXCHANGE, TEA) is Verdict.UPDATE
    assert model.verdict(EXCHANGE, CAT) is Verdict.DELETE
    assert jev.requests_to("/verdict")[0].json == {
        **EXCHANGE_FIELDS,
        "memory": {
            "id": "k3x9a",
            "text": "likes green tea",
            "updated_at": "2026-11-20T12:00:00.123456Z",
            "valid_until": None,
        },
    }


def test_verdict_time_is_converted_to_utc():
    from datetime import timedelta

    from memorybot.adapters.jev_http import memory_body

    jst = timezone(timedelta(hours=9))
    local = Memory("u1", "k3x9a", "x", AT, datetime(2026, 11, 20, 21, 0, tzinfo=jst))
    assert memory_body(local)["updated_at"] == "2026-11-20T12:00:00.000000Z"


def test_add_sends_each_verdict_as_strings(jev, model):
    jev.set_add(0.61)
    assert model.add(EXCHANGE, [(TEA, Verdict.KEEP), (CAT, Verdict.UPDATE)]) == 0.61
    assert jev.last("/add").json == {
        **EXCHANGE_FIELDS,
        "verdicts": [
            {"id": "k3x9a", "text": "likes green tea", "verdict": "keep"},
            {"id": "m7pq2", "text": "has a cat called Tama", "verdict": "update"},
        ],
    }


def test_review_sends_the_memory_and_its_owner_as_the_speaker(jev, model):
    jev.set_review("delete", memory_id="k3x9a")
    assert model.review(TEA) is Verdict.DELETE
    assert model.review(CAT) is Verdict.KEEP
    assert jev.requests_to("/review")[0].json == {
        "speaker": {"id": "u1", "name": None},
        "messages": [],
        "memory": {
            "id": "k3x9a",
            "text": "likes green tea",
            "updated_at": "2026-11-20T12:00:00.123456Z",
            "valid_until": None,
        },
    }


def test_review_never_accepts_update(jev, model):
    jev.set_review("update")
    with pytest.raises(ModelError):
        model.review(TEA)


def test_no_authorization_header_without_a_key(jev):
    client = JevHttpDecisionModel(jev.url, timeout_seconds=2.0)
    client.worth(EXCHANGE)
    assert "authorization" not in jev.last().headers


def test_a_wrong_or_missing_key_is_a_failure():
    with JevServer(api_key="right") as jev:
        with pytest.raises(ModelError):
            JevHttpDecisionModel(jev.url, timeout_seconds=2.0).worth(EXCHANGE)
        with pytest.raises(ModelError):
            JevHttpDecisionModel(jev.url, timeout_seconds=2.0, api_key="wrong").worth(EXCHANGE)
        assert JevHttpDecisionModel(jev.url, timeout_seconds=2.0, api_key="right").worth(EXCHANGE) == 0.9


@pytest.mark.parametrize("status", [200, 201, 202])
def test_any_2xx_with_a_good_body_is_accepted(jev, model, status):
    jev.answer("/worth", {"probability": 0.4}, status=status)
    assert model.worth(EXCHANGE) == 0.4


@pytest.mark.parametrize(
    "path, status",
    [
        (path, status)
        for path in ("/worth", "/decide", "/verdict", "/add", "/review")
        for status in (301, 400, 401, 404, 429, 500, 503)
        if (path, status) != ("/decide", 404)  # a service without /decide: asked per record (below)
    ],
)
def test_non_2xx_is_a_failure_even_with_a_good_body(jev, path, status):
    model = JevHttpDecisionModel(jev.url, timeout_seconds=2.0, retrier=quick_retrier())
    jev.answer(path, {"probability": 0.9, "verdict": "keep", "verdicts": {"k3x9a": "keep"}, "add": 0.9}, status=status)
    call = {
        "/worth": lambda: model.worth(EXCHANGE),
        "/decide": lambda: model.decide(EXCHANGE, [TEA]),
        "/verdict": lambda: model.verdict(EXCHANGE, TEA),
        "/add": lambda: model.add(EXCHANGE, [(TEA, Verdict.KEEP)]),
        "/review": lambda: model.review(TEA),
    }[path]
    with pytest.raises(ModelError):
        call()


def test_a_slow_answer_times_out_and_fails_after_a_few_attempts(jev):
    jev.set_delay(2.0, path="/verdict")
    # A window wide enough that a busy machine's slow timeouts never cut the retries short: the
    # count below is the policy's, not the scheduler's.
    policy = RetryPolicy(deadline_seconds=30.0, base_delay=0.01, max_delay=0.05, transient_window_seconds=30.0)
    client = JevHttpDecisionModel(jev.url, timeout_seconds=0.1, retrier=Retrier(policy))
    with pytest.raises(ModelFailed, match="timed out"):  # failed, not "not yet": a timeout is no throttle
        client.verdict(EXCHANGE, TEA)
    assert len(jev.requests_to("/verdict")) == policy.transient_attempts


def test_an_unreachable_service_is_a_failure():
    with JevServer() as jev:
        url = jev.url
    with pytest.raises(ModelError):
        JevHttpDecisionModel(url, timeout_seconds=0.5, retrier=quick_retrier()).worth(EXCHANGE)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b'{"probability": 0.9',
        b"[0.9]",
        b"0.9",
        b'"0.9"',
        b'{"probability": NaN}',
        b'{"probability": Infinity}',
        b"\xff\xfe",
    ],
)
def test_malformed_bodies_are_failures(jev, model, raw):
    jev.answer("/worth", raw=raw)
    with pytest.raises(ModelError):
        model.worth(EXCHANGE)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"probability": "0.7"},
        {"probability": True},
        {"probability": None},
        {"probability": [0.7]},
        {"p": 0.7},
        {"verdict": "keep"},
    ],
)
def test_probabilities_of_the_wrong_type_are_failures(jev, model, body):
    jev.answer("/worth", body)
    jev.answer("/add", body)
    with pytest.raises(ModelError):
        model.worth(EXCHANGE)
    with pytest.raises(ModelError):
        model.add(EXCHANGE, [(TEA, Verdict.KEEP)])


@pytest.mark.parametrize("value", [1.5, -0.1, 2, 1e308])
def test_out_of_range_probabilities_are_rejected_never_clamped(jev, model, value):
    jev.set_worth(value)
    with pytest.raises(ModelError):
        model.worth(EXCHANGE)


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, 0.5])
def test_the_bounds_are_valid_probabilities(jev, model, value):
    jev.set_worth(value)
    answer = model.worth(EXCHANGE)
    assert answer == value and isinstance(answer, float)


@pytest.mark.parametrize("verdict", ["maybe", "KEEP", "Keep", " keep", "", None, 1, True, ["keep"], {"v": "keep"}])
def test_unknown_or_mistyped_verdicts_are_failures(jev, model, verdict):
    jev.set_verdict(verdict)
    with pytest.raises(ModelError):
        model.verdict(EXCHANGE, TEA)


def test_extra_fields_in_an_answer_are_ignored(jev, model):
    jev.answer("/worth", {"probability": 0.8, "model": "jev-2"})
    assert model.worth(EXCHANGE) == 0.8


def test_one_client_reuses_its_connection(jev):
    model = JevHttpDecisionModel(jev.url, timeout_seconds=2.0)
    model.worth(EXCHANGE)
    model.verdict(EXCHANGE, TEA)
    model.review(TEA)
    ports = {r.client_port for r in jev.requests}
    assert len(ports) == 1


def test_one_instance_serves_concurrent_verdict_threads(jev, model):
    profile = [memory("u1", f"id{i:03d}", f"fact number {i}") for i in range(30)]
    for i, m in enumerate(profile):
        jev.set_verdict(["keep", "update", "delete"][i % 3], memory_id=m.memory_id)
    jev.set_delay(0.01, path="/verdict")
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda m: model.verdict(EXCHANGE, m), profile))
    assert answers == [[Verdict.KEEP, Verdict.UPDATE, Verdict.DELETE][i % 3] for i in range(30)]
    assert sorted(r.json["memory"]["id"] for r in jev.requests_to("/verdict")) == sorted(m.memory_id for m in profile)


def _extract(jev_model, store, chat):
    talk = [
        message("u1", "I moved to Osaka", name="alice"),
        message("bot", "Nice!", name="memorybot", bot=True, to="u1"),
    ]
    return Extractor(store, jev_model, chat).run(Speaker("u1", "alice"), GLOBAL_SCOPE, talk)


def test_decide_posts_the_exchange_and_every_memory_and_reads_each_verdict(jev, model):
    jev.set_verdict("update", memory_id=CAT.memory_id)
    jev.set_add(0.2)
    decision = model.decide(EXCHANGE, [TEA, CAT])
    assert decision.verdicts == {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.UPDATE} and decision.add == 0.2
    assert jev.last("/decide").json == {
        **EXCHANGE_FIELDS,
        "memories": [
            {
                "id": "k3x9a",
                "text": "likes green tea",
                "updated_at": "2026-11-20T12:00:00.123456Z",
                "valid_until": None,
            },
            {
                "id": "m7pq2",
                "text": "has a cat called Tama",
                "updated_at": "2026-11-20T12:00:00.123456Z",
                "valid_until": None,
            },
        ],
    }
    assert jev.questions() == ["decide"]


def test_a_decide_answer_is_read_per_record(jev, model):
    jev.answer("/decide", {"verdicts": {"k3x9a": "delete", "m7pq2": "forget it", "zzzzz": "delete"}, "add": 2})
    decision = model.decide(EXCHANGE, [TEA, CAT])
    assert decision.verdicts == {"k3x9a": Verdict.DELETE} and decision.add is None


@pytest.mark.parametrize("status", [404, 405])
def test_a_service_without_decide_is_asked_per_record_from_then_on(jev, status):
    legacy = JevHttpDecisionModel(jev.url, timeout_seconds=2.0, retrier=quick_retrier())
    jev.answer("/decide", {"error": "no such path"}, status=status)  # sticky: every /decide answers it
    jev.set_verdict("delete", memory_id=TEA.memory_id)
    jev.set_add(0.7)
    first = legacy.decide(EXCHANGE, [TEA, CAT])
    second = legacy.decide(EXCHANGE, [TEA])
    assert first.verdicts == {"k3x9a": Verdict.DELETE, "m7pq2": Verdict.KEEP} and first.add == 0.7
    assert first.requests == 3 and second.requests == 2  # a verdict a memory, and the add
    assert jev.questions().count("decide") == 1  # asked once: remembered for the process
    assert sorted(jev.questions()) == ["add", "add", "decide", "verdict", "verdict", "verdict"]
    assert jev.last("/add").json["verdicts"] == [{"id": "k3x9a", "text": "likes green tea", "verdict": "delete"}]


@pytest.mark.parametrize("status", [400, 422, 500])
def test_any_other_decide_error_is_a_failed_decision_not_a_fallback(jev, model, status):
    jev.answer("/decide", {"error": "no"}, status=status)
    with pytest.raises(ModelError):
        model.decide(EXCHANGE, [TEA])
    assert "verdict" not in jev.questions() and "add" not in jev.questions()


@pytest.mark.parametrize("offered", [True, False])
def test_extraction_through_jev_over_http_updates_and_adds(jev, offered):
    """With /decide: worth and one decision. Without (an older service): a verdict a record and the add."""
    jev.decide_offered = offered
    model = JevHttpDecisionModel(jev.url, timeout_seconds=2.0, retrier=quick_retrier())
    store = FakeMemoryStore()
    store.seed(TEA, CAT)
    jev.set_verdict("update", memory_id=CAT.memory_id)
    chat = ScriptedChat(texts={CAT.memory_id: "has a cat called Tama and lives in Osaka", None: "lives in Osaka"})
    result = _extract(model, store, chat)
    assert result.updated == [CAT.memory_id] and len(result.added) == 1
    asked = ["worth", "decide"] if offered else ["worth", "decide", "add", "verdict", "verdict"]
    assert jev.questions()[:2] + sorted(jev.questions()[2:]) == asked
    # and the rewrite and the add's text; the refused /decide is no model call
    assert result.model_calls == (4 if offered else 6)


def test_extraction_with_jev_down_raises_and_writes_nothing():
    store = FakeMemoryStore()
    store.seed(TEA)
    with JevServer() as jev:
        url = jev.url
    with pytest.raises(ModelUnavailable):  # not yet: the job is retried later
        _extract(JevHttpDecisionModel(url, timeout_seconds=0.5, retrier=quick_retrier()), store, ScriptedChat())
    assert store.ledger == [] and store.of("u1") == [TEA]


def test_extraction_with_a_refused_decision_leaves_every_record_untouched_and_adds_nothing(jev, model):
    store = FakeMemoryStore()
    store.seed(TEA, CAT)
    jev.set_verdict("update")
    jev.answer("/decide", status=422)  # a refusal, not a throttle: no decision
    result = _extract(model, store, ScriptedChat())
    assert result.updated == [] and result.deleted == [] and result.added == [] and result.failures == 1
    assert set(store.of("u1")) == {TEA, CAT}
    assert store.changes() == []


def test_extraction_with_every_verdict_failing_leaves_every_record_untouched_and_adds_nothing(jev):
    # Per record (a service without /decide): a failed verdict leaves its record untouched, and
    # with no verdict at all Jev cannot judge a duplicate, so no add is asked.
    jev.decide_offered = False
    legacy = JevHttpDecisionModel(jev.url, timeout_seconds=2.0, retrier=quick_retrier())
    store = FakeMemoryStore()
    store.seed(TEA, CAT)
    jev.set_verdict("delete")
    jev.answer("/verdict", status=500)
    result = _extract(legacy, store, ScriptedChat())
    assert result.deleted == [] and result.added == [] and result.failures == 2
    assert set(store.of("u1")) == {TEA, CAT}
    assert store.changes() == []
    assert len(jev.requests_to("/verdict")) == 6 and "add" not in jev.questions()  # three attempts each


def test_missing_url_is_a_configuration_error():
    with pytest.raises(ValueError, match="JEV_URL"):
        JevHttpDecisionModel("", timeout_seconds=1.0)


def test_a_url_with_a_path_prefix_keeps_it():
    from loopback import LoopbackServer

    with LoopbackServer() as server:
        server.answer("/jev/v2/worth", {"probability": 0.55})
        assert JevHttpDecisionModel(server.url + "/jev/v2/", timeout_seconds=2.0).worth(EXCHANGE) == 0.55
        assert [r.path for r in server.requests] == ["/jev/v2/worth"]
