"""A throttle is "not yet", not "no": a job whose model stays unavailable through every retry of
a call raises before applying anything, Lambda's retry runs it again and it applies once; only
when Lambda's retries are spent is nothing written (counted as DecisionsLost), and only then
does the reply worker apologise. Real HTTP backends against loopback servers, moto tables,
Powertools idempotency as deployed."""

from __future__ import annotations

import json

import pytest

from fakes import FakeMemoryStore, ScriptedChat, ScriptedJev, memory, message, speaker
from frontdoor import ALICE, APP_ID, CHANNEL, SCOPE, chat, context, extraction_job, learned_changes, owner, seed
from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import GLOBAL_SCOPE, Message, Verdict
from memorybot.core.record.jobs import ReplyJob
from memorybot.core.record.ports import ModelUnavailable
from memorybot.core.turn.extraction import Extractor
from memorybot.handlers import extraction, reply
from retrying import quick_retrier


@pytest.fixture
def jev():
    with JevServer(verdict="delete", add=0.9) as server:
        yield server


@pytest.fixture
def llm():
    with OpenAIServer(default_text="good to hear from you") as server:
        yield server


def _with_jev(front, jev) -> None:
    front.decision_model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=quick_retrier())


def test_a_throttled_extraction_raises_is_retried_and_applies_once(front, jev):
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    _with_jev(front, jev)
    work = extraction_job(front)
    jev.answer("/decide", {"error": "slow down"}, status=429, headers={"Retry-After": "0"})

    with pytest.raises(ModelUnavailable):
        extraction.handler(dict(work), context())
    assert learned_changes(front) == []  # the worth answer and the other calls changed nothing
    assert [
        m.memory_id for m in front.memory_store.read_profile(owner(ALICE), actor=_actor(), reason="t", limit=10)
    ] == ["abcde"]

    jev.clear()
    jev.set_verdict("delete")
    again = extraction.handler(dict(work), context())  # Lambda's retry, once the quota allows
    assert again["outcome"] == "done" and again["deleted"] == ["abcde"] and len(again["added"]) == 1
    assert extraction.handler(dict(work), context()) == again  # a third delivery: the stored result
    assert sorted(e.action.value for e in learned_changes(front)) == ["add", "delete"]


def test_when_lambdas_retries_are_spent_nothing_is_written_and_the_loss_is_counted(front, jev, capsys):
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    _with_jev(front, jev)
    work = extraction_job(front)
    jev.answer("/worth", {"error": "slow down"}, status=503)
    for _ in range(front.settings.async_retries):  # the first attempt and every retry but the last
        with pytest.raises(ModelUnavailable):
            extraction.handler(dict(work), context())
    capsys.readouterr()
    last = extraction.handler(dict(work), context())
    assert last["outcome"] == "decisions_lost" and learned_changes(front) == []
    [emitted] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "DecisionsLost" in line]
    assert emitted["DecisionsLost"] in (1.0, [1.0])
    assert emitted["_aws"]["CloudWatchMetrics"][0]["Namespace"] == front.settings.metrics_namespace
    jev.clear()
    assert extraction.handler(dict(work), context()) == last  # idempotent: not decided later by surprise
    assert learned_changes(front) == []


def _with_chat(front, llm) -> None:
    client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=1.0, retrier=quick_retrier())
    front.chat_model = OpenAIChatModel(client)


def _reply_job(front, text="hello there") -> dict:
    payload = chat(text, user=ALICE, user_name="alice")
    front.message_store.put(Message(CHANNEL, payload["id"], ALICE, "alice", text, scope=SCOPE, conversation_of=ALICE))
    return ReplyJob(payload["id"], payload["token"], APP_ID, CHANNEL, ALICE, "alice", SCOPE).to_json()


def test_a_throttled_reply_is_retried_by_lambda_not_apologised_for(front, llm):
    _with_chat(front, llm)
    work = _reply_job(front)
    llm.answer(llm.COMPLETIONS_PATH, {"error": {"message": "rate limit"}}, status=429, headers={"retry-after-ms": "1"})
    with pytest.raises(ModelUnavailable):
        reply.handler(dict(work), context())
    assert front.recorder.of_kind("edit") == [] and front.invoker.calls == []
    llm.clear()
    llm.reply("good to hear from you")
    assert reply.handler(dict(work), context())["status"] == "replied"
    assert [e.body["content"] for e in front.recorder.of_kind("edit")] == ["good to hear from you"]
    assert len(front.invoker.calls) == 1


def test_the_apology_comes_only_when_lambdas_retries_are_spent(front, llm):
    _with_chat(front, llm)
    work = _reply_job(front)
    llm.answer(llm.COMPLETIONS_PATH, {"error": {"message": "rate limit"}}, status=429, headers={"retry-after-ms": "1"})
    for _ in range(front.settings.async_retries):
        with pytest.raises(ModelUnavailable):
            reply.handler(dict(work), context())
        assert front.recorder.of_kind("edit") == []
    assert reply.handler(dict(work), context())["status"] == "apologised"
    assert [e.body["content"] for e in front.recorder.of_kind("edit")] == [text("apology")]
    assert front.invoker.calls == []


# ------------------------------------------------------------------ the core: a raise applies nothing


class UnavailableAt(ScriptedJev):
    """Jev answers, except that one question (or one memory's verdict) is unavailable."""

    def __init__(self, where: str, **kw) -> None:
        super().__init__(**kw)
        self.where = where

    def worth(self, exchange):
        if self.where == "worth":
            raise ModelUnavailable("throttled")
        return super().worth(exchange)

    def verdict(self, exchange, memory):
        if self.where == memory.memory_id:
            raise ModelUnavailable("throttled")
        return super().verdict(exchange, memory)

    def add(self, exchange, verdicts):
        if self.where == "add":
            raise ModelUnavailable("throttled")
        return super().add(exchange, verdicts)


class UnavailableChat(ScriptedChat):
    def __init__(self, where: str | None, **kw) -> None:
        super().__init__(**kw)
        self.where = where

    def write_memory(self, exchange, current):
        key = current.memory_id if current else "new"
        if self.where == key:
            raise ModelUnavailable("throttled")
        return super().write_memory(exchange, current)


@pytest.mark.parametrize(
    "jev_where, chat_where",
    [
        ("worth", None),
        ("m3333", None),
        ("add", None),  # a decision
        ("-", "m1111"),
        ("-", "new"),  # a rewrite, or the new memory's text
    ],
)
def test_an_unavailable_call_anywhere_in_an_extraction_raises_and_applies_nothing(jev_where, chat_where):
    store = FakeMemoryStore()
    store.seed(
        memory("u1", "m1111", "likes tea"), memory("u1", "m2222", "has a cat"), memory("u1", "m3333", "lives in Osaka")
    )
    verdicts = {"m1111": Verdict.UPDATE, "m2222": Verdict.DELETE, "m3333": Verdict.KEEP}
    jev = UnavailableAt(jev_where, verdicts=verdicts, add=0.9)
    extractor = Extractor(store, jev, UnavailableChat(chat_where))
    before = {m.memory_id: m for m in store.of("u1")}
    with pytest.raises(ModelUnavailable):
        extractor.run(speaker("u1"), GLOBAL_SCOPE, [message("u1", "I moved to Kyoto and gave the cat to my sister")])
    assert store.changes() == []
    assert {m.memory_id: m for m in store.of("u1")} == before
    # ...and the same extraction with the model back applies every decision
    result = Extractor(store, ScriptedJev(verdicts=verdicts, add=0.9), ScriptedChat()).run(
        speaker("u1"), GLOBAL_SCOPE, [message("u1", "I moved to Kyoto and gave the cat to my sister")]
    )
    assert result.deleted == ["m2222"] and result.updated == ["m1111"] and len(result.added) == 1


def _actor():
    from memorybot.core.record.domain import Actor

    return Actor.REPLY
