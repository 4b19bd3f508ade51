""" "Remember this": on one's own message, the same decisions as a reply's extraction on that one
message (actor command, the message kept as the source), answered in the person's language; on
anyone else's, or on data Discord did not resolve, a polite refusal and no model call."""

from __future__ import annotations

import threading

import pytest

from frontdoor import ALICE, BOB, SCOPE, body_of, context, event, forget, interaction_id, owner, pause, remember_this
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import Action, Actor, snowflake_time, text_problem
from memorybot.handlers import extraction
from memorybot.handlers.interactions import handler


def call(payload) -> dict:
    response = handler(event(payload), context())
    assert response["statusCode"] == 200
    return body_of(response)


def run_jobs(front) -> list[dict]:
    """What the extraction worker answers for each job handed to it, as Lambda would run them."""
    jobs, front.invoker.calls[:] = list(front.invoker.calls), []
    assert all(worker == "extraction" for worker, _ in jobs)
    return [extraction.handler(job, context()) for _, job in jobs]


def edits(front) -> list[str]:
    return [e.content for e in front.recorder.of_kind("edit")]


@pytest.mark.parametrize("locale", ["ja", "en-US"])
def test_ones_own_message_is_learned_from_with_its_id_as_the_source(front, locale):
    payload = remember_this("I keep two rabbits called Mochi and Kinako", locale=locale)
    answer = call(payload)
    assert answer == {"type": 5, "data": {"flags": 64}}  # deferred and ephemeral: only they see what happened
    [done] = run_jobs(front)
    assert done["outcome"] == "done" and len(done["added"]) == 1
    # the answer is the receipt of what changed, in their language, with the history's Undo
    [receipt] = edits(front)
    assert receipt.startswith(text("receipt_header", locale, count=1)) and done["added"][0] in receipt
    [learned] = front.memory_store.read_profile(owner(), actor=Actor.COMMAND, reason="test", limit=None)
    target = payload["data"]["target_id"]
    assert [s.message_id for s in learned.sources] == [target]
    [add] = [e for e in front.memory_store.ledger_for(owner()) if e.action is Action.ADD]
    assert add.actor is Actor.COMMAND
    # the exchange was that message alone, at its own time
    [(_, worth)] = [c for c in front.decision_model.calls if c[0] == "worth"]
    assert [m.message_id for m in worth.messages] == [target]
    assert worth.since == snowflake_time(target)


def test_with_receipts_off_the_answer_only_says_it_will_remember(front):
    front.people_store.set_receipts(owner().user_id, False)
    call(remember_this("I keep two rabbits called Mochi and Kinako", locale="ja"))
    assert len(run_jobs(front)[0]["added"]) == 1
    assert edits(front) == [text("remember_will", "ja")]


def test_a_message_with_nothing_worth_keeping_is_answered_so_and_nothing_is_written(front):
    front.decision_model.worth_answer = 0.1
    call(remember_this("ok", locale="ja"))
    assert run_jobs(front)[0]["outcome"] == "not_worth"
    assert edits(front) == [text("remember_nothing", "ja")]
    assert front.memory_store.read_profile(owner(), actor=Actor.COMMAND, reason="test", limit=None) == []


@pytest.mark.parametrize("locale", ["ja", "en-US"])
def test_someone_elses_message_is_refused_without_a_model_call(front, locale):
    answer = call(remember_this("Alice is allergic to cats", author=BOB, locale=locale))
    assert answer["data"] == {
        "content": text("remember_not_yours", locale),
        "flags": 64,
        "allowed_mentions": {"parse": []},
    }
    assert front.invoker.calls == [] and front.decision_model.calls == []
    assert front.memory_store.ledger_for(owner()) == [] and front.memory_store.ledger_for(owner(BOB)) == []


def test_a_bots_or_a_webhooks_message_is_nobodys_own_words(front):
    for flag in ({"bot": True}, {"webhook": True}):
        payload = remember_this("I love natto")
        message = next(iter(payload["data"]["resolved"]["messages"].values()))
        if "bot" in flag:
            message["author"]["bot"] = True
        else:
            message["webhook_id"] = "920000000000000001"
        assert call(payload)["data"]["content"] == text("remember_not_yours")
    assert front.invoker.calls == []


def _malformed() -> list:
    def missing_resolved(p):
        p["data"].pop("resolved")

    def other_id(p):
        p["data"]["target_id"] = "930000000000000001"

    def target_a_list(p):
        p["data"]["target_id"] = [1]

    def content_a_number(p):
        next(iter(p["data"]["resolved"]["messages"].values()))["content"] = 7

    def author_without_id(p):
        next(iter(p["data"]["resolved"]["messages"].values()))["author"] = {"username": "alice"}

    def messages_a_list(p):
        p["data"]["resolved"]["messages"] = ["nope"]

    return [missing_resolved, other_id, target_a_list, content_a_number, author_without_id, messages_a_list]


@pytest.mark.parametrize("spoil", _malformed(), ids=lambda f: f.__name__)
def test_missing_or_malformed_resolved_data_gets_a_polite_refusal_and_changes_nothing(front, spoil):
    payload = remember_this("I moved to Sapporo", locale="ja")
    spoil(payload)
    assert call(payload)["data"]["content"] == text("remember_unreadable", "ja")
    assert front.invoker.calls == [] and front.decision_model.calls == []


def test_a_message_without_text_has_nothing_to_remember(front):
    assert call(remember_this("   ", locale="ja"))["data"]["content"] == text("remember_no_text", "ja")
    assert front.invoker.calls == []


def test_while_paused_nothing_is_asked_and_the_answer_says_so(front):
    call(pause(locale="ja"))
    answer = call(remember_this("I started learning the koto", locale="ja"))
    assert answer["data"]["content"] == text("remember_paused", "ja")
    assert front.invoker.calls == [] and front.decision_model.calls == []


def test_a_pause_between_the_hand_off_and_the_worker_still_learns_nothing(front):
    call(remember_this("I started learning the koto", locale="ja"))
    call(pause())
    assert run_jobs(front)[0]["outcome"] == "paused"
    assert edits(front) == [text("remember_paused", "ja")]
    assert front.decision_model.calls == []


def test_a_forgotten_memorys_message_is_never_learned_from_again(front):
    payload = remember_this("My cat is called Tama", locale="en-US")
    call(payload)
    [done] = run_jobs(front)
    assert "Forgotten" in call(forget(done["added"][0]))["data"]["content"]
    asked = len(front.decision_model.calls)
    again = remember_this("My cat is called Tama", message_id=payload["data"]["target_id"])
    assert call(again)["data"]["content"] == text("remember_nothing")  # answered at once: no job, no model
    assert run_jobs(front) == [] and len(front.decision_model.calls) == asked
    assert front.memory_store.read_profile(owner(), actor=Actor.COMMAND, reason="test", limit=None) == []


def test_a_replayed_interaction_decides_once(front):
    payload = remember_this("I run every morning at six")
    call(payload)
    call(payload)  # Discord's signature stays valid for minutes
    answers = run_jobs(front)
    assert answers[0] == answers[1] and len(answers[0]["added"]) == 1
    assert len([e for e in front.memory_store.ledger_for(owner()) if e.action is Action.ADD]) == 1


def test_in_the_bots_dm_the_memory_lives_in_the_dm(front):
    payload = remember_this("I prefer green tea", locale="ja")
    payload.pop("guild_id")
    payload["user"] = payload.pop("member")["user"]
    payload["context"] = 1
    call(payload)
    run_jobs(front)
    assert front.memory_store.read_profile(owner(ALICE, "dm"), actor=Actor.COMMAND, reason="t", limit=None)
    assert front.memory_store.read_profile(owner(ALICE, SCOPE), actor=Actor.COMMAND, reason="t", limit=None) == []


def test_a_job_failing_on_every_attempt_tells_the_person_on_the_last_and_still_fails(front, monkeypatch):
    """Not the model's "not yet": a store that fails. Lambda runs the job again; only its last
    attempt answers, so the person is not left with Discord's "thinking" until the token expires."""
    call(remember_this("I run every morning at six", locale="ja"))
    [(_, job)], front.invoker.calls[:] = list(front.invoker.calls), []

    def broken(*args, **kwargs):
        raise RuntimeError("injected store failure")

    monkeypatch.setattr(front.memory_store, "apply", broken)
    attempts = front.settings.async_retries + 1  # Lambda's own run and its retries
    for attempt in range(attempts):
        with pytest.raises(RuntimeError):
            extraction.handler(job, context())
        assert edits(front) == ([text("remember_failed", "ja")] if attempt == attempts - 1 else [])
    assert front.memory_store.read_profile(owner(), actor=Actor.COMMAND, reason="test", limit=None) == []


ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def test_a_message_with_nothing_visible_is_refused_before_any_model_call_by_the_imports_rule(front):
    assert call(remember_this(ZERO_WIDTH, locale="en-US"))["data"]["content"] == text("remember_no_text")
    assert call(remember_this(f" {ZERO_WIDTH}\u3000 ", locale="ja"))["data"]["content"] == text(
        "remember_no_text", "ja"
    )
    assert front.invoker.calls == [] and front.decision_model.calls == []
    assert text_problem(ZERO_WIDTH) == "has no visible characters"  # the import refuses the same text


def test_the_same_message_again_is_already_remembered_and_nothing_is_asked_or_written(front):
    payload = remember_this("I play the erhu on Sundays", locale="ja")
    call(payload)
    [done] = run_jobs(front)
    assert len(done["added"]) == 1
    asked, ledger = len(front.decision_model.calls), front.memory_store.ledger_for(owner())
    again = remember_this("I play the erhu on Sundays", locale="ja", message_id=payload["data"]["target_id"])
    assert call(again)["data"]["content"] == text("remember_already", "ja")
    assert front.invoker.calls == [] and len(front.decision_model.calls) == asked
    assert front.memory_store.ledger_for(owner()) == ledger


def test_of_clicks_at_once_one_hands_the_job_on_and_the_others_are_told_it_is_remembered(front):
    target = remember_this("I keep three goats")["data"]["target_id"]
    answers: list[dict] = []
    clicks = [remember_this("I keep three goats", message_id=target) for _ in range(5)]
    threads = [threading.Thread(target=lambda p=p: answers.append(call(p))) for p in clicks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    deferred = [a for a in answers if a["type"] == 5]
    told = [a["data"]["content"] for a in answers if a["type"] == 4]
    assert len(deferred) == 1 and told == [text("remember_already")] * 4
    [done] = run_jobs(front)
    profile = front.memory_store.read_profile(owner(), actor=Actor.COMMAND, reason="test", limit=None)
    assert len(done["added"]) == 1 and len(profile) == 1


def test_a_message_that_taught_nothing_may_be_tried_again(front):
    front.decision_model.worth_answer = 0.1
    payload = remember_this("Hmm, okay")
    call(payload)
    assert run_jobs(front)[0]["outcome"] == "not_worth"
    front.decision_model.worth_answer = 0.9
    again = remember_this("Hmm, okay", message_id=payload["data"]["target_id"])
    assert call(again)["type"] == 5  # the claim was given back: the job runs again
    assert len(run_jobs(front)) == 1


def test_a_failed_hand_off_gives_the_claim_back(front, monkeypatch):
    payload = remember_this("I collect fountain pens")

    real, down = front.invoker.invoke, [True]

    def invoke(job):
        if down:
            raise RuntimeError("lambda unreachable")
        real(job)

    monkeypatch.setattr(front.invoker, "invoke", invoke)
    assert call(payload)["data"]["content"] == text("busy")
    down.clear()
    assert call(remember_this("I collect fountain pens", message_id=payload["data"]["target_id"]))["type"] == 5


@pytest.mark.parametrize("since", ["forget_all", "erasure"])
def test_a_message_taken_in_before_a_forget_all_or_an_erasure_has_nothing_more_to_teach(front, since):
    payload = remember_this("I sing in a choir")
    call(payload)
    assert len(run_jobs(front)[0]["added"]) == 1
    now = snowflake_time(interaction_id())
    if since == "forget_all":
        front.people_store.start_forget_all(ALICE, SCOPE, now, "forget-all-job", now)
    else:
        front.people_store.erased(ALICE, now)
    again = remember_this("I sing in a choir", message_id=payload["data"]["target_id"])
    assert call(again)["data"]["content"] == text("remember_nothing")  # not "remembered": it is gone
    assert run_jobs(front) == []
