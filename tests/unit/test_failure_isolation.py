"""One failing call stays one record's problem, and a service that is down is given up on in
seconds: the extraction worker (moto tables, Powertools idempotency, as deployed) and the nightly
review and diary, through the real HTTP backends against loopback model servers. And the
extraction's critical path: worth, verdicts, add decision (three model latencies, not four)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from fakes import (
    T0,
    Clock,
    FakeMemoryStore,
    FakeMessageStore,
    FakeRunStore,
    OneDecisionJev,
    ScriptedChat,
    ScriptedJev,
    memory,
)
from fakes import message as said
from fakes import speaker as speaker_named
from frontdoor import ALICE, APP_ID, CHANNEL, SCOPE, chat, context, extraction_job, learned_changes, owner, seed
from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient
from memorybot.adapters.retry import Retrier, RetryBudget, RetryPolicy
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.night.nightly_steps import run_in_process
from memorybot.core.night.window import STALE_AFTER
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import GLOBAL_SCOPE, JST, Action, Actor, Message, Owner, Verdict
from memorybot.core.record.jobs import ReplyJob
from memorybot.core.record.ports import ModelUnavailable
from memorybot.core.turn.extraction import Extractor, Outcome
from memorybot.handlers import extraction, reply

DEPLOYED = RetryPolicy()  # the deployed parameters: 60 s deadline for throttles, 3 quick attempts otherwise


def deployed_retrier() -> Retrier:
    return Retrier(DEPLOYED, budget=RetryBudget())


@pytest.fixture
def jev():
    with JevServer(verdict="keep", add=0.9) as server:
        yield server


def test_a_poison_decision_costs_three_calls_then_nothing_changes_and_the_turn_is_done(front, jev):
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    seed(front.memory_store, ALICE, "fghjk", "has a cat")
    front.decision_model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=deployed_retrier())
    jev.set_verdict("delete")
    jev.answer("/decide", {"error": "poison"}, status=500)  # this turn's decision always fails

    started = time.monotonic()
    result = extraction.handler(extraction_job(front), context())  # no raise: no Lambda retry of the turn
    elapsed = time.monotonic() - started

    assert result["outcome"] == "done" and result["deleted"] == result["updated"] == result["added"] == []
    assert jev.questions() == ["worth"] + ["decide"] * 3  # three attempts, then the decision has failed
    assert front.memory_store.get(owner(ALICE), "abcde").text == "lives in Osaka"  # untouched
    assert front.memory_store.get(owner(ALICE), "fghjk").text == "has a cat"
    assert learned_changes(front) == []  # if Jev is unavailable, no memory is written
    assert elapsed < 5.0  # two quick backoffs, not the 60 s deadline


def test_a_poison_verdict_costs_three_calls_and_the_turns_other_changes_are_applied(front, jev):
    """Per record (a Jev service without /decide): one failing verdict is that record's alone."""
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    seed(front.memory_store, ALICE, "fghjk", "has a cat")
    jev.decide_offered = False
    front.decision_model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=deployed_retrier())
    jev.fail("/verdict", "abcde", status=500)  # this memory's verdict always fails
    jev.set_verdict("delete", memory_id="fghjk")

    started = time.monotonic()
    result = extraction.handler(extraction_job(front), context())
    elapsed = time.monotonic() - started

    assert result["outcome"] == "done" and result["deleted"] == ["fghjk"] and result["added"] == []
    poison = [b for b in jev.bodies("/verdict") if b["memory"]["id"] == "abcde"]
    assert len(poison) == 3  # three attempts, then that verdict has failed
    assert front.memory_store.get(owner(ALICE), "abcde").text == "lives in Osaka"  # left untouched
    assert sorted(e.action.value for e in learned_changes(front)) == ["delete"]
    # no add is asked while a memory went unjudged: it may be the fact the exchange restates
    assert jev.bodies("/add") == []
    assert elapsed < 5.0  # two quick backoffs (< 0.25 s and < 0.5 s), not the 60 s deadline


def test_with_jev_answering_503_to_everything_a_turn_makes_nine_calls_and_gives_up_in_seconds(front, jev):
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    front.decision_model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=deployed_retrier())
    jev.answer("/worth", {"error": "down"}, status=503)
    jev.answer("/decide", {"error": "down"}, status=503)
    work = extraction_job(front)
    durations = []
    for _ in range(front.settings.async_retries):  # the first invocation and each Lambda retry but the last
        started = time.monotonic()
        with pytest.raises(ModelUnavailable):  # "worth" failed: nothing decided yet, so "not yet"
            extraction.handler(dict(work), context())
        durations.append(time.monotonic() - started)
    started = time.monotonic()
    last = extraction.handler(dict(work), context())
    durations.append(time.monotonic() - started)

    assert last["outcome"] == "decisions_lost" and learned_changes(front) == []
    # 3 attempts of "worth" per invocation, 3 invocations (async_retries = 2): 9 calls in all
    assert jev.questions() == ["worth"] * 3 * (front.settings.async_retries + 1)
    # each invocation: 3 attempts and 2 backoffs (< 0.75 s of waits); seconds, not the old 60 s deadline
    assert max(durations) < 5.0


def test_a_throttled_turn_is_still_not_yet_and_applies_once_the_quota_allows(front, jev):
    seed(front.memory_store, ALICE, "abcde", "lives in Osaka")
    policy = RetryPolicy(deadline_seconds=0.3, base_delay=0.01, max_delay=0.05)
    front.decision_model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=Retrier(policy))
    jev.set_verdict("delete")
    jev.answer("/decide", {"error": "slow down"}, status=429)
    work = extraction_job(front)
    with pytest.raises(ModelUnavailable):  # a throttled decision: the whole turn waits, nothing lost
        extraction.handler(dict(work), context())
    assert learned_changes(front) == []
    jev.clear()
    jev.set_verdict("delete")
    again = extraction.handler(dict(work), context())
    assert again["deleted"] == ["abcde"] and len(again["added"]) == 1


def test_a_failing_chat_model_gets_the_apology_at_once_not_after_lambdas_retries(front):
    with OpenAIServer() as llm:
        llm.answer(llm.COMPLETIONS_PATH, {"error": {"message": "internal"}}, status=503)
        client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=1.0, retrier=deployed_retrier())
        front.chat_model = OpenAIChatModel(client)
        payload = chat("hello there", user=ALICE, user_name="alice")
        front.message_store.put(
            Message(CHANNEL, payload["id"], ALICE, "alice", "hello there", scope=SCOPE, conversation_of=ALICE)
        )
        job = ReplyJob(payload["id"], payload["token"], APP_ID, CHANNEL, ALICE, "alice", SCOPE).to_json()
        started = time.monotonic()
        assert reply.handler(job, context())["status"] == "apologised"  # no raise: no Lambda retry
        assert time.monotonic() - started < 5.0  # not Lambda's retries, minutes apart
        assert len(llm.requests_to(llm.COMPLETIONS_PATH)) == 3
        assert [e.body["content"] for e in front.recorder.of_kind("edit")] == [text("apology")]
        assert front.invoker.calls == []  # nothing to extract from


# ---- the nightly review and the diary over HTTP


NOW = datetime(2026, 11, 30, 3, 0, tzinfo=JST)  # the alarm: covers the 24 hours before it


def _night(jev_model, chat_model) -> tuple[Consolidator, FakeMemoryStore, FakeMessageStore]:
    clock = Clock(NOW - timedelta(hours=12))
    memories, messages = FakeMemoryStore(clock), FakeMessageStore()
    extractor = Extractor(memories, jev_model, chat_model, clock=clock)
    return (
        Consolidator(
            memories,
            messages,
            FakeRunStore(),
            extractor,
            jev_model,
            chat_model,
            manifests=InMemoryManifests(),
            clock=clock,
        ),
        memories,
        messages,
    )


def test_a_stale_review_that_keeps_failing_keeps_the_memory_quickly(jev):
    model = JevHttpDecisionModel(jev.url, timeout_seconds=1.0, retrier=deployed_retrier())
    consolidator, memories, _ = _night(model, ScriptedChat())
    old = NOW - STALE_AFTER - timedelta(days=3)
    memories.seed(memory("u1", "s0001", "poisoned old fact", at=old), memory("u2", "s0002", "old plan", at=old))
    jev.fail("/review", "s0001", status=500)
    jev.set_review("delete", memory_id="s0002")

    started = time.monotonic()
    run = run_in_process(consolidator, NOW)
    elapsed = time.monotonic() - started

    assert [m.memory_id for m in memories.rows.values()] == ["s0001"]  # kept; the other one decayed
    assert run.summary.decayed == ["s0002"] and run.finished_at is not None
    assert len([b for b in jev.bodies("/review") if b["memory"]["id"] == "s0001"]) == 3
    assert elapsed < 5.0  # seconds, not the minutes of a 60 s deadline per attempt round


def test_a_failing_diary_leaves_it_empty_and_the_run_finishes():
    with OpenAIServer() as llm:
        llm.answer(llm.COMPLETIONS_PATH, {"error": {"message": "internal"}}, status=500)
        client = OpenAICompatibleClient(llm.url, "m", timeout_seconds=1.0, retrier=deployed_retrier())
        consolidator, _, messages = _night(ScriptedJev(worth=0.0), OpenAIChatModel(client))
        messages.put(said("u1", "what a day", at=NOW - timedelta(hours=5)))
        started = time.monotonic()
        run = run_in_process(consolidator, NOW)
        assert run.diary == "" and run.finished_at is not None and run.summary.failures == 1
        assert len(llm.requests_to(llm.COMPLETIONS_PATH)) == 3
        assert time.monotonic() - started < 5.0


# ---- the critical path: worth -> verdicts -> add decision

L = 0.5  # seconds per model call


class Calls:
    """When each model call started and ended (calls run on the extractor's threads)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()

    def take(self, name: str) -> None:
        started = time.monotonic()
        time.sleep(L)
        with self._lock:
            self.spans.append((name, started, time.monotonic()))

    def depth(self, until: float | None = None) -> int:
        """The longest chain of calls each started after the one before it ended: the model
        latencies on the critical path, whatever the machine's load (``until``: of the calls
        that had ended by then)."""
        longest: dict[int, int] = {}
        spans = sorted((s for s in self.spans if until is None or s[2] <= until), key=lambda s: s[2])
        for i, (_, start, _end) in enumerate(spans):
            before = [longest[j] for j in range(i) if spans[j][2] <= start]
            longest[i] = 1 + max(before, default=0)
        return max(longest.values(), default=0)


class SlowJev(ScriptedJev):
    def __init__(self, calls: Calls, **kw) -> None:
        super().__init__(**kw)
        self.timing = calls

    def _record(self, question, subject):
        self.timing.take(question)
        super()._record(question, subject)


class SlowChat(ScriptedChat):
    def __init__(self, calls: Calls, **kw) -> None:
        super().__init__(**kw)
        self.timing = calls

    def _record(self, what, subject):
        self.timing.take(what)
        super()._record(what, subject)


def _timed_run(store, jev, chat) -> tuple[float, object]:
    extractor = Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)))
    started = time.monotonic()
    result = extractor.run(speaker_named("u1"), GLOBAL_SCOPE, [said("u1", "I started learning the cello")])
    return time.monotonic() - started, result


def test_a_no_to_the_add_writes_nothing_and_drops_the_draft():
    store = FakeMemoryStore()
    store.seed(memory("u1", "m1111", "likes tea"))
    calls = Calls()
    jev = SlowJev(calls, add=0.1)  # keep, and no add
    elapsed, result = _timed_run(store, jev, SlowChat(calls, texts={None: "plays the cello"}))
    assert result.outcome is Outcome.DONE and result.added == [] and result.updated == []
    assert store.changes() == [] and [m.text for m in store.of("u1")] == ["likes tea"]  # no decision, no write
    # the draft was written beside the decision, and dropped
    assert sorted(name for name, _, _ in calls.spans) == ["add", "verdict", "worth", "write_memory"]
    assert calls.depth() == 3


class OneDecisionSlowJev(OneDecisionJev, SlowJev):
    """The one decision in one call, each call taking L."""


def _span(calls: Calls, name: str) -> list[tuple[float, float]]:
    return [(start, end) for n, start, end in calls.spans if n == name]


def _update_and_add(jev_kind) -> tuple[Calls, float, object, FakeMemoryStore]:
    store = FakeMemoryStore()
    store.seed(memory("u1", "m1111", "likes tea"), memory("u1", "m2222", "has a cat"))
    calls = Calls()
    jev = jev_kind(calls, verdicts={"m1111": Verdict.UPDATE}, add=0.9)
    elapsed, result = _timed_run(store, jev, SlowChat(calls))
    assert result.outcome is Outcome.DONE and result.updated == ["m1111"] and len(result.added) == 1
    assert [e.actor for e in store.changes()] == [Actor.EXTRACTION, Actor.EXTRACTION]
    return calls, elapsed, result, store


def test_per_record_the_turn_takes_three_model_latencies_with_each_rewrite_started_by_its_verdict():
    """A Jev service without /decide: worth, verdicts (in parallel), add || (rewrite, draft): 3 L.
    The depth is the chain of calls each started after the one before it ended, so it says 3
    whatever the machine's load; the wall time is the extraction benchmark's figure."""
    calls, elapsed, _, _ = _update_and_add(SlowJev)
    assert len(calls.spans) == 6 and calls.depth() == 3  # worth, 2 verdicts, add, rewrite, draft
    assert elapsed >= 3 * L


def test_one_decision_beside_the_draft_then_the_rewrites_three_latencies():
    calls, elapsed, result, _ = _update_and_add(OneDecisionSlowJev)
    assert result.model_calls == 4
    assert sorted(n for n, _, _ in calls.spans) == ["decide", "worth", "write_memory", "write_memory"]
    [(_, worth_end)] = _span(calls, "worth")
    [(decide_start, decide_end)] = _span(calls, "decide")
    draft, rewrite = sorted(_span(calls, "write_memory"))
    assert worth_end <= decide_start and worth_end <= draft[0] < decide_end  # the draft beside the decision
    assert rewrite[0] >= decide_end  # the rewrite once the decision named the update
    assert calls.depth() == 3 and elapsed >= 3 * L


def test_a_kept_profile_and_an_add_take_two_latencies():
    store = FakeMemoryStore()
    store.seed(*(memory("u1", f"m{i}111", f"fact {i}") for i in range(1, 10)))
    calls = Calls()
    jev = OneDecisionSlowJev(calls, add=0.9)  # keep all nine, add one
    elapsed, result = _timed_run(store, jev, SlowChat(calls))
    assert result.updated == result.deleted == [] and len(result.added) == 1 and result.model_calls == 3
    assert calls.depth() == 2 and elapsed >= 2 * L


# ---- a written memory's vector: after its write, never one more wait before it


class SlowEmbeddings(OfflineEmbeddingModel):
    """Embeddings as slow as the chat model (E = L), each call timed with the model calls."""

    def __init__(self, calls: Calls) -> None:
        super().__init__()
        self.timing = calls

    def embed(self, texts):
        self.timing.take("embed")
        return super().embed(texts)


class TimedStore(FakeMemoryStore):
    """When each change was committed and each vector stored (by memory id)."""

    def __init__(self) -> None:
        super().__init__()
        self.committed: dict[str, float] = {}
        self.vector_stored: dict[str, float] = {}

    def apply(self, change, **kw):
        entry = super().apply(change, **kw)
        self.committed[change.memory_id] = time.monotonic()
        return entry

    def set_embedding(self, memory, embedding):
        stored = super().set_embedding(memory, embedding)
        self.vector_stored[memory.memory_id] = time.monotonic()
        return stored


def _with_slow_embeddings(store, jev, chat, calls) -> tuple[float, object]:
    embeddings = SlowEmbeddings(calls)
    extractor = Extractor(store, jev, chat, clock=Clock(T0 + timedelta(days=1)), embeddings=embeddings)
    started = time.monotonic()
    result = extractor.run(speaker_named("u1"), GLOBAL_SCOPE, [said("u1", "I started learning the cello")])
    return time.monotonic() - started, result


def test_a_kept_profile_and_an_add_commit_after_two_latencies_and_the_vector_comes_after_the_write():
    """worth -> decide || draft -> write -> the vector: with embeddings as slow as the model, the
    add is still committed after two model latencies; its vector is stored after the write."""
    store = TimedStore()
    store.seed(*(memory("u1", f"m{i}111", f"fact {i}") for i in range(1, 10)))  # nine: nothing ranked
    calls = Calls()
    elapsed, result = _with_slow_embeddings(store, OneDecisionSlowJev(calls, add=0.9), SlowChat(calls), calls)
    [added] = result.added
    committed = store.committed[added]
    assert sorted(n for n, _, _ in calls.spans) == ["decide", "embed", "worth", "write_memory"]
    assert calls.depth(until=committed) == 2  # worth, then the decision beside the draft: no embedding
    [(_, embedded)] = _span(calls, "embed")
    assert committed < embedded <= store.vector_stored[added]  # the vector came after the write
    assert store.get(Owner(GLOBAL_SCOPE, "u1"), added).embedding == OfflineEmbeddingModel().embed_one("new fact")
    assert [e.action for e in store.changes()] == [Action.ADD]  # the vector is no change: no ledger row
    assert elapsed >= 2 * L


def test_rewrites_commit_after_three_latencies_and_their_vectors_are_asked_for_after_the_writes():
    """worth -> decide || draft -> rewrites -> writes -> the rewrites' vectors (one call)."""
    store = TimedStore()
    store.seed(memory("u1", "m1111", "likes tea"), memory("u1", "m2222", "has a cat"))
    calls = Calls()
    jev = OneDecisionSlowJev(calls, verdicts={"m1111": Verdict.UPDATE, "m2222": Verdict.UPDATE}, add=0.9)
    chat = SlowChat(calls, texts={"m1111": "likes green tea", "m2222": "has two cats", None: "plays the cello"})
    _, result = _with_slow_embeddings(store, jev, chat, calls)
    assert sorted(result.updated) == ["m1111", "m2222"] and len(result.added) == 1
    last_commit = max(store.committed.values())
    assert calls.depth(until=last_commit) == 3  # worth, decide, the rewrites: no embedding before a write
    rewrites_end = max(end for start, end in _span(calls, "write_memory") if start >= _span(calls, "decide")[0][1])
    after_writes = [span for span in _span(calls, "embed") if span[0] >= rewrites_end]
    assert len(after_writes) == 1 and after_writes[0][0] >= min(store.committed[m] for m in ("m1111", "m2222"))
    for memory_id in [*result.updated, *result.added]:
        assert store.committed[memory_id] < store.vector_stored[memory_id]
        stored = store.get(Owner(GLOBAL_SCOPE, "u1"), memory_id)
        assert stored.embedding == OfflineEmbeddingModel().embed_one(stored.text)


def test_a_ranked_profiles_query_embedding_runs_beside_worth_and_never_delays_the_decision():
    """Twelve memories: the ten are ranked with the query's embedding, which starts beside "worth"
    (the profile is loaded then): the decision starts as soon as worth has answered."""
    store = TimedStore()
    store.seed(*(memory("u1", f"m{i:02d}x1"[:5], f"fact {i}") for i in range(12)))
    calls = Calls()
    jev = OneDecisionSlowJev(calls, add=0.9)
    _, result = _with_slow_embeddings(store, jev, SlowChat(calls), calls)
    [added] = result.added
    [(worth_start, worth_end)] = _span(calls, "worth")
    [(decide_start, _)] = _span(calls, "decide")
    query, vector = sorted(_span(calls, "embed"))
    assert query[0] < worth_end and query[1] <= decide_start  # beside worth, in before the decision
    assert decide_start - worth_end < L / 2  # nothing waited between them
    assert calls.depth(until=store.committed[added]) == 2  # worth (|| the query's embedding), the decision
    assert vector[0] >= store.committed[added]  # the new memory's vector after its write
    assert len(jev.asked("decide")[0]) == 10
