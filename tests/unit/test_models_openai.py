"""The openai backend against a real OpenAI-compatible fake on loopback."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from exchanges import exchange
from fakes import FakeMemoryStore, ScriptedJev, message
from loopback.openai_server import OpenAIServer
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
from memorybot.core.prompting import prompts
from memorybot.core.prompting.prompts import build_reply_prompt
from memorybot.core.record.domain import GLOBAL_SCOPE, Memory, MemoryDraft, PromptMessage, Speaker, Verdict
from memorybot.core.record.ports import ModelError, ModelFailed
from memorybot.core.turn.extraction import Extractor
from retrying import quick_retrier

EXCHANGE = exchange(("alice", "I moved to Osaka last month"), ("bot", "Nice!"))
SAID = '<message from="speaker">I moved to Osaka last month</message>'  # the speaker's line, as prompts quote it
ALICE = Speaker("u1", "alice")
AT = datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=UTC)
TEA = Memory("u1", "k3x9a", "likes green tea", AT, AT)
CAT = Memory("u1", "m7pq2", "has a cat called Tama", AT, AT)

PATH = OpenAIServer.COMPLETIONS_PATH


@pytest.fixture(scope="module")
def _server():
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def llm(_server):
    _server.clear()
    return _server


@pytest.fixture(scope="module")
def _client(_server):
    client = OpenAICompatibleClient(
        _server.url, "test-model", timeout_seconds=2.0, api_key="sk-test", retrier=quick_retrier()
    )
    yield client
    client.close()


@pytest.fixture
def jev(llm, _client):
    _client._format_step = 0  # a previous test may have taught it the server takes no schema
    return OpenAIDecisionModel(_client)


@pytest.fixture
def chat(llm, _client):
    return OpenAIChatModel(_client)


def _user_text(body) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


# ------------------------------------------------------------------ decisions


def test_worth_request_shape(llm, jev):
    llm.reply('{"probability": 0.72}')
    assert jev.worth(EXCHANGE) == 0.72
    sent = llm.last(PATH)
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.json
    assert body["model"] == "test-model"
    question = prompts.worth_question(EXCHANGE)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer_worth", "strict": True, "schema": question.schema},
    }
    assert body["temperature"] == 0
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] > 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == prompts.DECISION_SYSTEM
    assert '{"probability"' in body["messages"][1]["content"]
    assert (
        SAID in body["messages"][1]["content"] and '<speaker id="u1" name="alice"/>' in body["messages"][1]["content"]
    )


@pytest.mark.parametrize(
    "ask, question, answer",
    [
        (lambda j: j.worth(EXCHANGE), prompts.worth_question(EXCHANGE), '{"probability": 0.5}'),
        (
            lambda j: j.decide(EXCHANGE, [TEA, CAT]),
            prompts.decide_question(EXCHANGE, [TEA, CAT]),
            '{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}, "add": 0.5}',
        ),
        (lambda j: j.review(TEA), prompts.review_question(TEA), '{"verdict": "keep"}'),
    ],
)
def test_each_question_sends_exactly_this_body(llm, jev, ask, question, answer):
    llm.reply(answer)
    ask(jev)
    assert llm.last(PATH).json == {
        "model": "test-model",
        "messages": [{"role": "system", "content": question.system}, {"role": "user", "content": question.user}],
        "max_tokens": question.max_tokens,
        "temperature": 0.0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": question.tool_name, "strict": True, "schema": question.schema},
        },
    }


def test_one_decision_sends_the_exchange_and_every_memory(llm, jev):
    llm.reply('{"verdicts": {"k3x9a": "update", "m7pq2": "delete"}, "add": 0.3}')
    decision = jev.decide(EXCHANGE, [TEA, CAT])
    assert decision.verdicts == {"k3x9a": Verdict.UPDATE, "m7pq2": Verdict.DELETE} and decision.add == 0.3
    [body] = llm.completions()
    user = _user_text(body)
    assert SAID in user
    assert '<memory id="k3x9a">likes green tea</memory>' in user  # undated: a backend outside the factory
    assert '<memory id="m7pq2">has a cat called Tama</memory>' in user
    assert '"keep" | "update" | "delete"' in user and body["messages"][0]["content"] == prompts.DECISION_SYSTEM


@pytest.mark.parametrize(
    "content, verdicts, add",
    [
        # each field on its own: what is missing or unknown is that record's failure alone
        ('{"verdicts": {"k3x9a": "update"}, "add": 0.8}', {"k3x9a": Verdict.UPDATE}, 0.8),  # a missing id
        ('{"verdicts": {"k3x9a": "maybe", "m7pq2": "KEEP"}, "add": 0.8}', {}, 0.8),  # unknown verdicts
        ('{"verdicts": {"k3x9a": "keep", "m7pq2": 1}, "add": 0.8}', {"k3x9a": Verdict.KEEP}, 0.8),
        ('{"verdicts": {"k3x9a": "keep", "zzzzz": "delete"}, "add": 0.8}', {"k3x9a": Verdict.KEEP}, 0.8),  # extra id
        (
            '{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}, "add": 1.5}',
            {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.KEEP},
            None,
        ),
        (
            '{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}, "add": "0.9"}',
            {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.KEEP},
            None,
        ),
        (
            '{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}, "add": true}',
            {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.KEEP},
            None,
        ),
        ('{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}}', {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.KEEP}, None),
        (
            '```json\n{"verdicts": {"k3x9a": "delete", "m7pq2": "keep"}, "add": 0}\n```',
            {"k3x9a": Verdict.DELETE, "m7pq2": Verdict.KEEP},
            0.0,
        ),
    ],
)
def test_the_decision_is_read_per_record(llm, jev, content, verdicts, add):
    llm.reply(content)
    decision = jev.decide(EXCHANGE, [TEA, CAT])
    assert dict(decision.verdicts) == verdicts and decision.add == add


@pytest.mark.parametrize("content", ["keep everything", "", "[]", '{"verdicts": ["keep"], "add": 0.5}', '{"add": 0.5}'])
def test_a_decision_that_is_not_the_object_fails_whole(llm, jev, content):
    llm.reply(content)
    with pytest.raises(ModelError):
        jev.decide(EXCHANGE, [TEA, CAT])


def test_review_allows_keep_and_delete_only(llm, jev):
    llm.reply('{"verdict": "delete"}')
    assert jev.review(TEA) is Verdict.DELETE
    assert '"keep" | "delete"' in _user_text(llm.last(PATH).json)
    llm.reply('{"verdict": "update"}')
    with pytest.raises(ModelError):
        jev.review(TEA)


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"probability": 0.25}', 0.25),
        ('  {"probability": 1}\n', 1.0),
        ('```json\n{"probability": 0.6}\n```', 0.6),
        ('Here is my answer: {"probability": 0.4} Hope that helps.', 0.4),
        ('{"note": [1, {"x": 2}]} then {"probability": 0.5}', None),  # the first object is the answer
    ],
)
def test_json_is_found_in_the_text(llm, jev, content, expected):
    llm.reply(content)
    if expected is None:
        with pytest.raises(ModelError):
            jev.worth(EXCHANGE)
    else:
        assert jev.worth(EXCHANGE) == expected


@pytest.mark.parametrize(
    "content",
    [
        '{"probability": "0.7"}',
        '{"probability": true}',
        '{"probability": null}',
        '{"probability": 1.5}',
        '{"probability": -0.2}',
        '{"probability": NaN}',
        '{"probability": 0.7, "reason": "likes tea"}',
        '{"verdict": "keep"}',
        "{}",
        "[0.7]",
        "0.7",
        "probably 0.7",
        "",
    ],
)
def test_anything_but_the_probability_object_is_a_failure(llm, jev, content):
    llm.reply(content)
    with pytest.raises(ModelError):
        jev.worth(EXCHANGE)


@pytest.mark.parametrize(
    "content",
    [
        '{"verdict": "maybe"}',
        '{"verdict": "KEEP"}',
        '{"verdict": 1}',
        '{"verdict": null}',
        '{"verdict": ["keep"]}',
        '{"verdict": "keep", "why": "x"}',
        '{"probability": 0.9}',
        "keep",
    ],
)
def test_anything_but_a_known_verdict_is_a_failure(llm, jev, content):
    llm.reply(content)
    with pytest.raises(ModelError):
        jev.review(TEA)


def test_null_content_is_a_failure(llm, jev):
    from loopback.openai_server import completion

    llm.answer(PATH, completion(None))
    with pytest.raises(ModelError):
        jev.worth(EXCHANGE)


@pytest.mark.parametrize(
    "raw",
    [
        b"{broken",
        b"",
        b"[]",
        b'{"choices": []}',
        b'{"choices": [{"message": {}}]}',
        b'{"choices": [{"message": {"content": 7}}]}',
    ],
)
def test_malformed_envelopes_are_failures(llm, jev, chat, raw):
    llm.answer(PATH, raw=raw)
    with pytest.raises(ModelError):
        jev.worth(EXCHANGE)
    with pytest.raises(ModelError):
        chat.write_memory(EXCHANGE, None)


@pytest.mark.parametrize("status", [401, 429, 500, 503])
def test_non_2xx_is_a_failure(llm, jev, chat, status):
    from loopback.openai_server import completion

    llm.answer(PATH, completion('{"probability": 0.9}'), status=status)
    with pytest.raises(ModelError):
        jev.worth(EXCHANGE)
    with pytest.raises(ModelError):
        chat.write_reply([PromptMessage("system", "s"), PromptMessage("user", "hi")])


def test_a_slow_server_times_out(llm):
    llm.set_delay(2.0)
    client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=0.1, retrier=quick_retrier())
    with pytest.raises(ModelFailed, match="timed out"):  # a few quick retries, then failed
        OpenAIDecisionModel(client).worth(EXCHANGE)
    with pytest.raises(ModelFailed, match="timed out"):
        OpenAIChatModel(client).write_memory(EXCHANGE, None)
    assert len(llm.requests) <= 6


def _formats(llm) -> list[str]:
    """The response_format type of each completion request, in order ("text": none asked)."""
    return [b.get("response_format", {}).get("type", "text") for b in llm.completions()]


def test_a_server_without_any_response_format_is_asked_in_plain_text_from_then_on(llm, jev, _client):
    llm.reject_response_format = True
    llm.reply('Sure. {"probability": 0.8}')
    assert jev.worth(EXCHANGE) == 0.8
    assert _formats(llm) == ["json_schema", "json_object", "text"]
    llm.reply('{"verdict": "delete"}')
    assert jev.review(TEA) is Verdict.DELETE
    assert _formats(llm) == ["json_schema", "json_object", "text", "text"]  # remembered: one request
    assert _client.answer_format == "text"


def test_a_server_that_refuses_json_schema_gets_json_mode_and_keeps_it(llm, jev, _client):
    llm.refused_formats = {"json_schema"}
    llm.reply('{"probability": 0.6}')
    assert jev.worth(EXCHANGE) == 0.6
    assert _formats(llm) == ["json_schema", "json_object"]
    assert llm.completions()[1]["response_format"] == {"type": "json_object"}
    llm.reply('{"verdicts": {"k3x9a": "keep", "m7pq2": "delete"}, "add": 0.1}')
    assert jev.decide(EXCHANGE, [TEA, CAT]).verdicts == {"k3x9a": Verdict.KEEP, "m7pq2": Verdict.DELETE}
    llm.reply('{"verdict": "keep"}')
    assert jev.review(TEA) is Verdict.KEEP
    assert _formats(llm) == ["json_schema", "json_object", "json_object", "json_object"]
    assert _client.answer_format == "json_object"


def test_each_question_sends_its_own_schema(llm, jev):
    llm.reply('{"verdicts": {"k3x9a": "keep", "m7pq2": "keep"}, "add": 0.2}')
    jev.decide(EXCHANGE, [TEA, CAT])
    llm.reply('{"verdict": "keep"}')
    jev.review(TEA)
    decide, review = (b["response_format"]["json_schema"] for b in llm.completions())
    assert decide["name"] == "answer_decision" and review["name"] == "answer_review"
    assert decide["schema"]["properties"]["verdicts"]["required"] == ["k3x9a", "m7pq2"]
    assert review["schema"]["properties"]["verdict"]["enum"] == ["keep", "delete"]
    assert decide["strict"] is review["strict"] is True


def test_the_format_is_remembered_per_server(llm, jev):
    """Another client (another server or model) starts from the schema again."""
    llm.refused_formats = {"json_schema"}
    llm.reply('{"probability": 0.6}')
    jev.worth(EXCHANGE)
    fresh = OpenAIDecisionModel(OpenAICompatibleClient(llm.url, "other-model", timeout_seconds=2.0))
    fresh.worth(EXCHANGE)
    assert _formats(llm) == ["json_schema", "json_object", "json_schema", "json_object"]


def test_texts_ask_no_response_format(llm, chat):
    chat.write_diary("alice: hi")
    assert _formats(llm) == ["text"]


def test_other_400s_do_not_switch_the_schema_off(llm, jev, _client):
    llm.answer_once(PATH, {"error": {"message": "context length exceeded"}}, status=400)
    with pytest.raises(ModelError):
        jev.worth(EXCHANGE)
    llm.reply('{"probability": 0.5}')
    assert jev.worth(EXCHANGE) == 0.5
    assert _formats(llm) == ["json_schema", "json_schema"]
    assert _client.answer_format == "json_schema"


def test_no_authorization_header_without_a_key(llm):
    OpenAIChatModel(OpenAICompatibleClient(llm.url, "m", timeout_seconds=2.0)).write_diary("alice: hi")
    assert "authorization" not in llm.last(PATH).headers


def test_a_server_requiring_a_key_refuses_a_wrong_one():
    with OpenAIServer(api_key="right") as llm:
        with pytest.raises(ModelError):
            OpenAIDecisionModel(OpenAICompatibleClient(llm.url, "m", timeout_seconds=2.0, api_key="wrong")).worth(
                EXCHANGE
            )
        assert (
            OpenAIDecisionModel(OpenAICompatibleClient(llm.url, "m", timeout_seconds=2.0, api_key="right")).worth(
                EXCHANGE
            )
            == 0.9
        )


# ------------------------------------------------------------------ writing


def test_write_memory_takes_the_first_non_empty_line(llm, chat):
    llm.reply("\n\n  Lives in Osaka since last month.  \nSecond line that is not a memory")
    assert chat.write_memory(EXCHANGE, None) == MemoryDraft("Lives in Osaka since last month.")
    body = llm.last(PATH).json
    assert "response_format" not in body
    assert SAID in _user_text(body)


def test_write_memory_for_a_rewrite_sees_only_that_record(llm, chat):
    llm.reply("Likes green tea and lives in Osaka")
    chat.write_memory(EXCHANGE, TEA)
    body = llm.last(PATH).json
    everything = json.dumps(body, ensure_ascii=False)
    assert TEA.text in everything
    assert CAT.text not in everything and CAT.memory_id not in everything


@pytest.mark.parametrize("content", ["", "   \n \n\t"])
def test_an_empty_text_is_a_failure(llm, chat, content):
    llm.reply(content)
    with pytest.raises(ModelError):
        chat.write_memory(EXCHANGE, None)
    with pytest.raises(ModelError):
        chat.write_diary("alice: hi")
    with pytest.raises(ModelError):
        chat.write_reply([PromptMessage("system", "s"), PromptMessage("user", "hi")])


def test_a_memory_cut_off_at_the_token_limit_is_a_failure(llm, chat):
    llm.finish_reason = "length"
    llm.reply("Likes green tea and has lived in Osaka since the spring of")
    with pytest.raises(ModelError, match="cut off"):
        chat.write_memory(EXCHANGE, None)
    llm.reply("Likes green tea.\nAnd then the model kept going until it ran out of")
    assert chat.write_memory(EXCHANGE, None) == MemoryDraft("Likes green tea.")


def test_a_filtered_completion_is_a_failure(llm, chat):
    llm.finish_reason = "content_filter"
    llm.reply("Likes green tea.")
    with pytest.raises(ModelError):
        chat.write_memory(EXCHANGE, None)


def test_write_diary_is_one_line_from_the_transcript(llm, chat):
    llm.reply("今日はみんなで旅行の話をした。\n（補足）")
    assert chat.write_diary("alice: 旅行に行きたい\nbob: いいね") == "今日はみんなで旅行の話をした。"
    body = llm.last(PATH).json
    assert "<transcript>\nalice: 旅行に行きたい\nbob: いいね\n</transcript>" in _user_text(body)
    assert "日本語" in body["messages"][0]["content"]


def test_write_reply_maps_the_core_prompt_one_to_one(llm, chat):
    memories = [TEA, CAT]
    talk = [
        message("u1", "hi there", name="alice"),
        message("b", "hello!", name="memorybot", bot=True),
        message("u1", "what do I like?", name="alice"),
    ]
    prompt = build_reply_prompt(ALICE, memories, talk)
    llm.reply("You like green tea!\nAnd you have a cat.")
    assert chat.write_reply(prompt) == "You like green tea!\nAnd you have a cat."
    body = llm.last(PATH).json
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in prompt]
    assert body["temperature"] > 0 and "response_format" not in body


def test_write_reply_without_conversation_is_a_failure(llm, chat):
    with pytest.raises(ModelError):
        chat.write_reply([PromptMessage("system", "only a system message")])
    assert llm.requests == []


# ------------------------------------------------------------------ through the core


def test_extraction_rewrites_see_only_the_record_being_rewritten(llm):
    """The write_memory prompts built during a real extraction hold one record each, never the profile."""
    store = FakeMemoryStore()
    profile = [Memory("u1", f"mem{i:02d}", f"secret fact number {i}", AT, AT) for i in range(5)]
    store.seed(*profile)
    jev = ScriptedJev(verdicts={"mem01": Verdict.UPDATE, "mem03": Verdict.UPDATE}, add=0.9)
    llm.responder = lambda body: "Rewritten fact"
    chat = OpenAIChatModel(OpenAICompatibleClient(llm.url, "m", timeout_seconds=2.0))
    talk = [message("u1", "I moved to Osaka", name="alice"), message("b", "Nice!", name="memorybot", bot=True, to="u1")]
    result = Extractor(store, jev, chat).run(ALICE, GLOBAL_SCOPE, talk)
    assert sorted(result.updated) == ["mem01", "mem03"] and len(result.added) == 1
    bodies = [json.dumps(b, ensure_ascii=False) for b in llm.completions()]
    assert len(bodies) == 3
    seen = [{m.memory_id for m in profile if m.text in b} for b in bodies]
    assert sorted(seen, key=sorted) == [set(), {"mem01"}, {"mem03"}]


def test_the_dated_memory_asks_for_its_schema_and_reads_an_object_over_lines(llm, _client):
    from datetime import date

    from memorybot.core.record.domain import JST

    chat = OpenAIChatModel(_client)
    chat.zone, chat.clock = JST, lambda: AT  # as the factory dates it
    llm.reply('{\n  "text": "Lives in Osaka",\n  "validUntil": "2030-01-31"\n}')
    assert chat.write_memory(EXCHANGE, None) == MemoryDraft("Lives in Osaka", date(2030, 1, 31))
    asked = llm.last(PATH).json["response_format"]
    assert asked == {
        "type": "json_schema",
        "json_schema": {"name": "write_memory", "strict": True, "schema": prompts.memory_schema()},
    }
    llm.finish_reason = "length"  # an object cut short is no memory
    llm.reply('{"text": "Lives in Os')
    with pytest.raises(ModelError):
        chat.write_memory(EXCHANGE, None)


def test_the_undated_memory_asks_no_format(llm, chat):
    llm.reply("Lives in Osaka.")
    assert chat.write_memory(EXCHANGE, None) == MemoryDraft("Lives in Osaka.")
    assert "response_format" not in llm.last(PATH).json
