"""The bedrock backend: request shapes and answer parsing on the real boto3 client with
botocore's Stubber (Bedrock cannot run locally), and timeouts, retries and statuses over
real HTTP against a loopback server standing in for the Bedrock Runtime endpoint."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime

import boto3
import pytest
from botocore.stub import ANY, Stubber

from exchanges import exchange
from fakes import message
from loopback import LoopbackServer
from memorybot.adapters import llm_backend
from memorybot.adapters.bedrock import BedrockChatModel, BedrockConverse, BedrockDecisionModel, bedrock_client
from memorybot.config import Settings
from memorybot.core.prompting import prompts
from memorybot.core.prompting.prompts import build_reply_prompt
from memorybot.core.record.domain import Memory, MemoryDraft, PromptMessage, Speaker, Verdict
from memorybot.core.record.ports import ModelError, ModelFailed, ModelUnavailable
from retrying import quick_retrier

EXCHANGE = exchange(("alice", "I moved to Osaka last month"), ("bot", "Nice!"))
ALICE = Speaker("u1", "alice")
AT = datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=UTC)
TEA = Memory("u1", "k3x9a", "likes green tea", AT, AT)
CAT = Memory("u1", "m7pq2", "has a cat called Tama", AT, AT)
MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
SETTINGS = Settings(
    table_names={},
    decision_model="bedrock",
    chat_model="bedrock",
    model_timeout_seconds=3.0,
    bedrock_decision_model_id=MODEL_ID,
    bedrock_chat_model_id="chat-model-id",
)


def _session() -> boto3.Session:
    return boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture(scope="module")
def _client():
    return bedrock_client(SETTINGS, session=_session())


@pytest.fixture
def stubbed(_client):
    client = _client
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def _tool_answer(name: str, value: object, stop: str = "tool_use") -> dict:
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": name, "input": value}}],
            }
        },
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 12},
    }


def _text_answer(*texts: str, stop: str = "end_turn") -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": t} for t in texts]}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 12},
    }


def _decisions(client) -> BedrockDecisionModel:
    return BedrockDecisionModel(BedrockConverse(client, SETTINGS.bedrock_decision_model_id, quick_retrier()))


def _chat(client) -> BedrockChatModel:
    return BedrockChatModel(BedrockConverse(client, SETTINGS.bedrock_chat_model_id, quick_retrier()))


def _forced(question: prompts.Question) -> dict:
    """The exact request a decision must make: one tool, forced by name, schema as its input."""
    return {
        "modelId": MODEL_ID,
        "system": [{"text": question.system}],
        "messages": [{"role": "user", "content": [{"text": question.user}]}],
        "inferenceConfig": {"maxTokens": question.max_tokens, "temperature": 0.0},
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": question.tool_name, "description": ANY, "inputSchema": {"json": question.schema}}}
            ],
            "toolChoice": {"tool": {"name": question.tool_name}},
        },
    }


def test_worth_is_forced_through_the_probability_tool(stubbed):
    client, stub = stubbed
    question = prompts.worth_question(EXCHANGE)
    stub.add_response("converse", _tool_answer("answer_worth", {"probability": 0.8}), _forced(question))
    assert _decisions(client).worth(EXCHANGE) == 0.8
    assert question.schema["properties"]["probability"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert question.schema["additionalProperties"] is False and question.schema["required"] == ["probability"]


def test_the_one_decision_is_forced_through_its_schema_and_read_per_record(stubbed):
    client, stub = stubbed
    question = prompts.decide_question(EXCHANGE, [TEA, CAT])
    verdicts = question.schema["properties"]["verdicts"]
    assert verdicts["properties"]["k3x9a"]["enum"] == ["keep", "update", "delete"]
    assert verdicts["required"] == ["k3x9a", "m7pq2"] and question.max_tokens > prompts.DECIDE_BASE_TOKENS
    answer = {"verdicts": {"k3x9a": "update", "m7pq2": "later", "zzzzz": "delete"}, "add": 0.6}
    stub.add_response("converse", _tool_answer("answer_decision", answer), _forced(question))
    decision = _decisions(client).decide(EXCHANGE, [TEA, CAT])
    assert decision.verdicts == {"k3x9a": Verdict.UPDATE} and decision.add == 0.6  # m7pq2: left untouched


def test_review_uses_its_own_tool(stubbed):
    client, stub = stubbed
    review = prompts.review_question(TEA)
    assert review.schema["properties"]["verdict"]["enum"] == ["keep", "delete"]
    stub.add_response("converse", _tool_answer("answer_review", {"verdict": "delete"}), _forced(review))
    assert _decisions(client).review(TEA) is Verdict.DELETE


@pytest.mark.parametrize(
    "value",
    [
        {"probability": "0.8"},
        {"probability": True},
        {"probability": 1.01},
        {"probability": -0.5},
        {"probability": None},
        {"probability": 0.8, "why": "x"},
        {},
        [0.8],
        "0.8",
        0.8,
        None,
    ],
)
def test_a_tool_input_that_breaks_the_schema_is_a_failure(stubbed, value):
    client, stub = stubbed
    stub.add_response("converse", _tool_answer("answer_worth", value))
    with pytest.raises(ModelError):
        _decisions(client).worth(EXCHANGE)


@pytest.mark.parametrize("value", [{"verdict": "update"}, {"verdict": "maybe"}, {"verdict": "Keep"}, {"verdict": 0}])
def test_review_rejects_update_and_unknown_verdicts(stubbed, value):
    client, stub = stubbed
    stub.add_response("converse", _tool_answer("answer_review", value))
    with pytest.raises(ModelError):
        _decisions(client).review(TEA)


def test_an_answer_without_the_tool_is_a_failure(stubbed):
    client, stub = stubbed
    stub.add_response("converse", _text_answer('{"probability": 0.9}'))
    stub.add_response("converse", _tool_answer("some_other_tool", {"probability": 0.9}))
    model = _decisions(client)
    with pytest.raises(ModelError, match="toolUse"):
        model.worth(EXCHANGE)
    with pytest.raises(ModelError, match="toolUse"):
        model.worth(EXCHANGE)


@pytest.mark.parametrize(
    "code, status", [("ValidationException", 400), ("ModelTimeoutException", 408), ("AccessDeniedException", 403)]
)
def test_service_errors_are_failures_without_retry(stubbed, code, status):
    client, stub = stubbed
    stub.add_client_error("converse", service_error_code=code, http_status_code=status)
    stub.add_client_error("converse", service_error_code=code, http_status_code=status)
    with pytest.raises(ModelError, match=code):
        _decisions(client).decide(EXCHANGE, [TEA])
    with pytest.raises(ModelError, match=code):
        _chat(client).write_memory(EXCHANGE, None)


@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered"])
def test_filtered_answers_are_failures(stubbed, stop):
    client, stub = stubbed
    stub.add_response("converse", _tool_answer("answer_worth", {"probability": 0.9}, stop=stop))
    stub.add_response("converse", _text_answer("Sorry, I can't help with that.", stop=stop))
    with pytest.raises(ModelError):
        _decisions(client).worth(EXCHANGE)
    with pytest.raises(ModelError):
        _chat(client).write_reply([PromptMessage("system", "s"), PromptMessage("user", "hi")])


def test_write_memory_asks_with_the_chat_model_and_takes_the_first_line(stubbed):
    client, stub = stubbed
    task = prompts.memory_task(EXCHANGE, TEA)
    stub.add_response(
        "converse",
        _text_answer("\n  Likes green tea; moved to Osaka.\n", "Extra commentary"),
        {
            "modelId": "chat-model-id",
            "system": [{"text": task.system}],
            "messages": [{"role": "user", "content": [{"text": task.user}]}],
            "inferenceConfig": {"maxTokens": prompts.MEMORY_MAX_TOKENS, "temperature": 0.0},
        },
    )
    assert _chat(client).write_memory(EXCHANGE, TEA) == MemoryDraft("Likes green tea; moved to Osaka.")
    assert TEA.text in task.user and CAT.text not in task.user + task.system


def test_a_dated_write_memory_asks_for_the_end_and_answers_the_text_with_it(stubbed):
    from memorybot.core.record.dates import PromptTime
    from memorybot.core.record.domain import JST

    client, stub = stubbed
    chat = _chat(client)
    now = datetime(2026, 11, 20, 21, 0, tzinfo=UTC)
    chat.zone, chat.clock = JST, lambda: now
    task = prompts.memory_task(EXCHANGE, None, PromptTime(now, JST))
    assert '"validUntil"' in task.system and "Today is Sat 2026-11-21." in task.system
    answer = '{"text": "In Osaka until around 2026-12-05", "validUntil": "2026-12-05"}'
    stub.add_response(
        "converse",
        _text_answer(answer),
        {
            "modelId": "chat-model-id",
            "system": [{"text": task.system}],
            "messages": [{"role": "user", "content": [{"text": task.user}]}],
            "inferenceConfig": {"maxTokens": prompts.MEMORY_MAX_TOKENS, "temperature": 0.0},
        },
    )
    assert chat.write_memory(EXCHANGE, None) == MemoryDraft("In Osaka until around 2026-12-05", date(2026, 12, 5))


def test_a_memory_cut_off_at_max_tokens_is_a_failure(stubbed):
    client, stub = stubbed
    stub.add_response("converse", _text_answer("Likes green tea and has lived in Osaka since", stop="max_tokens"))
    stub.add_response("converse", _text_answer("Likes green tea.\nand more and more", stop="max_tokens"))
    with pytest.raises(ModelError, match="cut off"):
        _chat(client).write_memory(EXCHANGE, None)
    assert _chat(client).write_memory(EXCHANGE, None) == MemoryDraft("Likes green tea.")


def test_write_diary_takes_the_first_line(stubbed):
    client, stub = stubbed
    stub.add_response("converse", _text_answer("今日は3人が旅行の話をした。\n二行目"))
    assert _chat(client).write_diary("alice: hi") == "今日は3人が旅行の話をした。"


def test_empty_or_textless_answers_are_failures(stubbed):
    client, stub = stubbed
    stub.add_response("converse", _text_answer("  \n "))
    stub.add_response("converse", _tool_answer("x", {}))
    with pytest.raises(ModelError):
        _chat(client).write_memory(EXCHANGE, None)
    with pytest.raises(ModelError):
        _chat(client).write_diary("alice: hi")


def test_write_reply_sends_system_apart_and_merges_same_role_turns(stubbed):
    client, stub = stubbed
    talk = [
        message("b", "earlier bot line", name="memorybot", bot=True),
        message("u2", "hi all", name="bob"),
        message("u1", "hello", name="alice"),
        message("b", "hey!", name="memorybot", bot=True),
        message("u1", "what do I like?", name="alice"),
    ]
    prompt = build_reply_prompt(ALICE, [TEA], talk)
    stub.add_response(
        "converse",
        _text_answer("You like ", "green tea!"),
        {
            "modelId": "chat-model-id",
            "system": [{"text": prompt[0].content}],
            "messages": [
                {"role": "user", "content": [{"text": llm_backend.CONVERSATION_OPENER}]},
                {"role": "assistant", "content": [{"text": "earlier bot line"}]},
                {
                    "role": "user",
                    "content": [
                        {
                            "text": '<message from="member" author_id="u2">hi all</message>\n\n'
                            '<message from="speaker">hello</message>'
                        }
                    ],
                },
                {"role": "assistant", "content": [{"text": "hey!"}]},
                {"role": "user", "content": [{"text": '<message from="speaker">what do I like?</message>'}]},
            ],
            "inferenceConfig": {
                "maxTokens": prompts.REPLY_MAX_TOKENS,
                "temperature": prompts.REPLY_TEMPERATURE,
            },
        },
    )
    assert _chat(client).write_reply(prompt) == "You like green tea!"
    assert '<memory id="k3x9a">likes green tea</memory>' in prompt[0].content


def test_write_reply_without_conversation_makes_no_call(stubbed):
    client, _ = stubbed
    with pytest.raises(ModelError):
        _chat(client).write_reply([PromptMessage("system", "only the system message")])


def test_the_client_uses_the_model_timeout_and_leaves_retries_to_the_shared_policy():
    client = bedrock_client(
        dataclasses.replace(SETTINGS, model_timeout_seconds=2.5, model_max_in_flight=7), session=_session()
    )
    config = client.meta.config
    assert config.read_timeout == 2.5 and config.connect_timeout == 2.5
    assert config.retries["total_max_attempts"] == 1
    assert config.max_pool_connections == 7


# ------------------------------------------------------------------ over real HTTP

PLAIN_ID = "test-model"
CONVERSE_PATH = f"/model/{PLAIN_ID}/converse"


@pytest.fixture
def endpoint():
    with LoopbackServer() as server:
        yield server


def _http_decisions(endpoint, timeout: float = 2.0) -> BedrockDecisionModel:
    settings = dataclasses.replace(SETTINGS, model_timeout_seconds=timeout)
    client = bedrock_client(settings, session=_session(), endpoint_url=endpoint.url)
    return BedrockDecisionModel(BedrockConverse(client, PLAIN_ID, quick_retrier()))


def test_over_http_the_request_is_signed_json_with_the_forced_tool(endpoint):
    endpoint.answer(CONVERSE_PATH, _tool_answer("answer_worth", {"probability": 0.65}))
    assert _http_decisions(endpoint).worth(EXCHANGE) == 0.65
    sent = endpoint.last(CONVERSE_PATH)
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert sent.json["toolConfig"]["toolChoice"] == {"tool": {"name": "answer_worth"}}
    assert sent.json["messages"][0]["content"][0]["text"] == prompts.worth_question(EXCHANGE).user
    assert (
        '<message from="speaker">I moved to Osaka last month</message>'
        in sent.json["messages"][0]["content"][0]["text"]
    )


def test_over_http_a_slow_endpoint_is_retried_a_few_times_then_failed(endpoint):
    endpoint.set_delay(2.0)
    endpoint.answer(CONVERSE_PATH, _tool_answer("answer_worth", {"probability": 0.65}))
    with pytest.raises(ModelFailed, match="ReadTimeoutError"):  # a timeout is no throttle: failed, not "not yet"
        _http_decisions(endpoint, timeout=0.2).worth(EXCHANGE)
    assert 2 <= len(endpoint.requests) <= 3


@pytest.mark.parametrize(
    "status, code",
    [
        (429, "ThrottlingException"),
        (503, "ServiceUnavailableException"),
        (429, "ModelNotReadyException"),
        (500, "InternalServerException"),
    ],
)
def test_over_http_a_throttle_or_transient_error_is_retried_then_answered(endpoint, status, code):
    endpoint.answer_once(CONVERSE_PATH, {"message": "slow down"}, status=status, headers={"x-amzn-ErrorType": code})
    endpoint.answer(CONVERSE_PATH, _tool_answer("answer_worth", {"probability": 0.65}))
    assert _http_decisions(endpoint).worth(EXCHANGE) == 0.65
    assert len(endpoint.requests) == 2


def test_over_http_a_throttle_that_lasts_past_the_deadline_is_unavailable(endpoint):
    endpoint.answer(
        CONVERSE_PATH, {"message": "slow down"}, status=429, headers={"x-amzn-ErrorType": "ThrottlingException"}
    )
    with pytest.raises(ModelUnavailable, match="ThrottlingException"):
        _http_decisions(endpoint).worth(EXCHANGE)
    assert len(endpoint.requests) >= 2


@pytest.mark.parametrize("status, code", [(400, "ValidationException"), (403, "AccessDeniedException")])
def test_over_http_other_errors_fail_at_once(endpoint, status, code):
    endpoint.answer(CONVERSE_PATH, {"message": "no"}, status=status, headers={"x-amzn-ErrorType": code})
    with pytest.raises(ModelError) as caught:
        _http_decisions(endpoint).worth(EXCHANGE)
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("raw", [b"{broken", b"<html>gateway</html>"])
def test_over_http_a_malformed_body_is_a_failure(endpoint, raw):
    endpoint.answer(CONVERSE_PATH, raw=raw)
    with pytest.raises(ModelError):
        _http_decisions(endpoint).worth(EXCHANGE)
