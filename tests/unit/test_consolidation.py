"""The nightly run with fakes of the ports: window, chunks, filters, failures, decay, diary, claim."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from fakes import (
    Clock,
    FakeMemoryStore,
    FakeMessageStore,
    FakeRunStore,
    OneDecisionJev,
    ScriptedChat,
    ScriptedJev,
    Speaker,
    memory,
    message,
    owner,
)
from memorybot.adapters.manifests import InMemoryManifests
from memorybot.adapters.offline import OfflineChatModel
from memorybot.admin_api import run_record
from memorybot.config import Settings
from memorybot.core.night.consolidation import Consolidator
from memorybot.core.night.nightly_jobs import SpeakerMark
from memorybot.core.night.nightly_steps import SPEAKER_RETRY, StepRetry, run_in_process, with_retries
from memorybot.core.night.window import (
    CHUNK_MESSAGES,
    CHUNKS_PER_SPEAKER,
    DIARY_MESSAGES,
    STALE_AFTER,
    STALE_REVIEWS_PER_NIGHT,
    by_speaker,
    chunks,
    max_model_calls,
    window_for,
)
from memorybot.core.prompting.prompts import diary_task
from memorybot.core.record.catalog import Language
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import JST, Action, Actor, SourceRef, Verdict
from memorybot.core.record.jobs import BadJob
from memorybot.core.record.ports import ModelUnavailable
from memorybot.core.rights import commands
from memorybot.core.turn.extraction import Extractor

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=JST)  # the alarm: covers 2026-11-29 03:00 .. 2026-11-30 03:00 JST


def jst(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=JST)


class Night:
    """A consolidator wired to fakes, with the clocks set inside the window."""

    def __init__(self, jev: ScriptedJev | None = None, chat: ScriptedChat | None = None, **kwargs) -> None:
        self.clock = Clock(jst(29, 12))
        self.memories = FakeMemoryStore(self.clock)
        self.messages = FakeMessageStore()
        self.runs = FakeRunStore()
        self.jev = jev or ScriptedJev()
        self.chat = chat or ScriptedChat()
        extractor = Extractor(self.memories, self.jev, self.chat, clock=self.clock)
        self.consolidator = Consolidator(
            self.memories,
            self.messages,
            self.runs,
            extractor,
            self.jev,
            self.chat,
            manifests=InMemoryManifests(),
            clock=self.clock,
            **kwargs,
        )

    def say(self, author: str, content: str, at: datetime, *, bot: bool = False, **kw):
        """A line of ``author``'s own conversation with the bot (``to=""``: channel history)."""
        said = message(author, content, at=at, bot=bot, **kw)
        self.messages.put(said)
        return said

    def run(self, now: datetime = NOW):
        return run_in_process(self.consolidator, now)

    def exchanges(self) -> list[str]:
        return [exchange.render() for exchange in self.jev.asked("worth")]

    def model_calls(self) -> int:
        return len(self.jev.calls) + len(self.chat.seen)


# ---- the window and the day label ---------------------------------------------


@pytest.mark.parametrize(
    ("now", "label", "start", "end"),
    [
        (jst(30, 3), "2026-11-29", jst(29, 3), jst(30, 3)),
        (jst(30, 3, 7), "2026-11-29", jst(29, 3), jst(30, 3)),  # a late redelivery: the same night
        (jst(30, 2, 59, 59), "2026-11-28", jst(28, 3), jst(29, 3)),  # before the alarm: the night before
        (datetime(2026, 11, 29, 18, 0, tzinfo=UTC), "2026-11-29", jst(29, 3), jst(30, 3)),  # the cron, in UTC
    ],
)
def test_window_ends_at_the_latest_0300_jst_and_is_labelled_by_its_first_day(now, label, start, end):
    window = window_for(now)
    assert (window.day_label, window.start, window.end) == (label, start, end)
    assert window.end - window.start == timedelta(hours=24)


def test_a_message_at_0259_jst_is_in_the_night_and_one_at_0300_is_not():
    night = Night()
    night.say("a", "too early 0259 previous day", jst(29, 2, 59))
    night.say("a", "first of the window 0300", jst(29, 3, 0))
    night.say("a", "last of the window 0259", jst(30, 2, 59))
    night.say("a", "next night 0300", jst(30, 3, 0))
    run = night.run()
    assert run.day_label == "2026-11-29"
    (exchange,) = night.exchanges()
    assert "first of the window 0300" in exchange and "last of the window 0259" in exchange
    assert "too early" not in exchange and "next night" not in exchange


# ---- grouping and chunking -----------------------------------------------------


def test_chunks_are_cut_from_the_newest_message_so_the_newest_five_are_full():
    msgs = [message("a", f"m{i}", at=jst(29, 4) + timedelta(minutes=i)) for i in range(14)]
    assert [len(c) for c in chunks(msgs)] == [2, 6, 6]  # the short one is the oldest
    assert [m.content for m in chunks(msgs)[-1]] == [f"m{i}" for i in range(8, 14)]
    thirty_one = [message("a", f"m{i}", at=jst(29, 4) + timedelta(minutes=i)) for i in range(31)]
    kept = chunks(thirty_one)
    assert [len(c) for c in kept] == [CHUNK_MESSAGES] * CHUNKS_PER_SPEAKER  # five full chunks of six
    assert [m.content for c in kept for m in c] == [f"m{i}" for i in range(1, 31)]  # only the oldest dropped
    many = [message("a", f"m{i}", at=jst(29, 4) + timedelta(minutes=i)) for i in range(40)]
    kept = chunks(many)
    assert len(kept) == CHUNKS_PER_SPEAKER
    assert [m.content for m in kept[0]] == [f"m{i}" for i in range(10, 16)]
    assert kept[-1][-1].content == "m39"
    assert chunks([]) == []


def test_the_run_feeds_each_speakers_newest_five_chunks_to_extraction_with_actor_nightly():
    night = Night()
    for i in range(40):  # 40 messages: the newest 30 in five full chunks, the oldest ten dropped
        night.say("a", f"a-msg-{i:02d}", jst(29, 4) + timedelta(minutes=i))
    for i in range(3):
        night.say("b", f"b-msg-{i:02d}", jst(29, 5) + timedelta(minutes=i))
    run = night.run()

    exchanges = night.exchanges()
    a_chunks = [e for e in exchanges if "a-msg" in e]
    b_chunks = [e for e in exchanges if "b-msg" in e]
    assert len(a_chunks) == CHUNKS_PER_SPEAKER and len(b_chunks) == 1
    assert [e.count("\n") + 1 for e in a_chunks] == [CHUNK_MESSAGES] * CHUNKS_PER_SPEAKER
    seen = "\n".join(a_chunks)
    assert "a-msg-09" not in seen and "a-msg-10" in seen and "a-msg-39" in seen
    assert not any("a-msg" in e and "b-msg" in e for e in exchanges)  # one speaker per chunk

    reads = [e for e in night.memories.ledger if e.action is Action.READ]
    assert {e.actor for e in reads} == {Actor.NIGHTLY} and {e.run_id for e in reads} == {run.run_id}
    adds = night.memories.changes()
    assert adds and all(e.actor is Actor.NIGHTLY and e.run_id == run.run_id for e in adds)
    assert run.summary.chunks == CHUNKS_PER_SPEAKER + 1 and run.summary.speakers == 2


def test_bot_messages_are_not_considered():
    night = Night()
    night.say("a", "human words", jst(29, 10))
    night.say("bot", "BOT-WORDS", jst(29, 10, 1), bot=True)
    night.say("bot", "MORE-BOT-WORDS", jst(29, 10, 2), bot=True)
    run = night.run()
    assert owner("bot") not in by_speaker(night.messages.between(jst(29, 3), jst(30, 3)))
    assert len(night.exchanges()) == 1 and "BOT" not in night.exchanges()[0]
    assert night.memories.of("bot") == [] and run.summary.speakers == 1
    ((_, diary_transcript),) = [s for s in night.chat.seen if s[0] == "write_diary"]
    assert "BOT" not in diary_transcript


def test_channel_history_decides_no_ones_memories_but_reaches_the_diary():
    # Other people's ordinary messages (fetched as history) are not their conversation with the bot.
    night = Night()
    night.say("a", "I play the cello", jst(29, 10))
    night.say("h", "HISTORY-I-am-a-pilot", jst(29, 10, 1), to="")
    night.say("a", "a line fetched as history", jst(29, 10, 2), to="")
    run = night.run()
    assert owner("h") not in by_speaker(night.messages.between(jst(29, 3), jst(30, 3)))
    assert night.exchanges() == ["usera: I play the cello"]
    assert night.memories.of("h") == [] and run.summary.speakers == 1
    (transcript,) = [s for q, s in night.chat.seen if q == "write_diary"]
    assert "HISTORY-I-am-a-pilot" in transcript


def test_one_person_in_two_scopes_is_two_speakers_each_learned_in_its_own_scope():
    night = Night()
    night.say("a", "SERVER-ONE-cello", jst(29, 10), scope="guild:1")
    night.say("a", "SERVER-TWO-violin", jst(29, 10, 1), scope="guild:2")
    run = night.run()
    assert run.summary.speakers == 2
    assert sorted(night.exchanges()) == ["usera: SERVER-ONE-cello", "usera: SERVER-TWO-violin"]
    one, two = night.memories.of(owner("a", "guild:1")), night.memories.of(owner("a", "guild:2"))
    assert len(one) == 1 and len(two) == 1 and night.memories.of("a") == []
    assert {e.owner for e in night.memories.ledger} == {owner("a", "guild:1"), owner("a", "guild:2")}


# ---- failures --------------------------------------------------------------------


def test_a_poison_speaker_is_recorded_failed_once_and_the_run_finishes():
    night = Night()
    for speaker in ("a", "b", "c"):
        night.say(speaker, f"{speaker} says something", jst(29, 9))
    attempts = []

    def poison(change):
        if change.user_id == "b":
            attempts.append(change)
            return True
        return False

    night.memories.fail_apply = poison
    run = night.run()
    assert run.finished_at is not None
    assert len(attempts) == 3  # the first attempt and the step's two retries
    assert [m.user_id for m in night.memories.of("a")] == ["a"]
    assert [m.user_id for m in night.memories.of("c")] == ["c"]
    assert night.memories.of("b") == []
    assert run.summary.failed_speakers == [owner("b").key]  # once, however many attempts
    assert len(run.summary.added) == 2 and run.summary.speakers == 3
    assert night.runs.step_mark(run.run_id, f"speaker#{owner('b').key}", SpeakerMark).status == "failed"
    night.memories.fail_apply = lambda change: False
    assert night.run(NOW + timedelta(minutes=2)) is None  # finished: a second start does nothing


def test_a_speaker_whose_model_stays_throttled_gets_the_maps_throttle_retries_then_is_recorded_failed():
    asked = []

    class ThrottledForB(ScriptedJev):
        def worth(self, exchange):
            if "b says" in exchange.render():
                asked.append(exchange)
                raise ModelUnavailable("throttled")
            return super().worth(exchange)

    night = Night(jev=ThrottledForB())
    for speaker in ("a", "b"):
        night.say(speaker, f"{speaker} says something", jst(29, 9))
    run = night.run()
    assert len(asked) == 1 + SPEAKER_RETRY.throttled  # more than the two an ordinary failure gets
    assert run.finished_at is not None and run.summary.failed_speakers == [owner("b").key]
    assert [m.user_id for m in night.memories.of("a")] == ["a"] and night.memories.of("b") == []


def _failing(*errors: Exception):
    attempts: list[Exception] = []

    def step():
        attempts.append(errors[len(attempts)])
        raise attempts[-1]

    return step, attempts


def test_a_steps_retry_waits_as_the_state_machine_does():
    retry = StepRetry(throttled=5, other=2)
    waits: list[float] = []
    step, attempts = _failing(*[ModelUnavailable("t")] * 6)
    with pytest.raises(ModelUnavailable):
        with_retries(step, retry, sleep=waits.append, draw=lambda: 1.0)  # the jitter's longest draw
    assert len(attempts) == 6 and waits == [30, 60, 120, 240, 300]  # doubled, capped at 5 minutes
    waits.clear()
    with pytest.raises(ModelUnavailable):
        with_retries(_failing(*[ModelUnavailable("t")] * 6)[0], retry, sleep=waits.append, draw=lambda: 0.25)
    assert waits == [7.5, 15, 30, 60, 75]  # full jitter: a share of each cap
    waits.clear()
    step, attempts = _failing(RuntimeError("a"), RuntimeError("b"), RuntimeError("c"))
    with pytest.raises(RuntimeError, match="c"):
        with_retries(step, retry, sleep=waits.append)
    assert len(attempts) == 3 and waits == [5, 10]  # no jitter on the other errors' Retry


def test_a_steps_retry_counts_each_kind_on_its_own_and_never_retries_a_refused_payload():
    waits: list[float] = []
    step, attempts = _failing(RuntimeError("x"), ModelUnavailable("t"), RuntimeError("y"), RuntimeError("z"))
    with pytest.raises(RuntimeError, match="z"):
        with_retries(step, StepRetry(throttled=1, other=2), sleep=waits.append, draw=lambda: 1.0)
    assert waits == [5, 30, 10]  # the throttle's retry did not spend one of the others'
    step, attempts = _failing(BadJob("no run_id"))
    with pytest.raises(BadJob):
        with_retries(step, SPEAKER_RETRY, sleep=waits.append)
    assert len(attempts) == 1


def test_a_speaker_whose_forget_lookup_failed_once_is_retried_within_the_run():
    night = Night()
    night.say("a", "a says something", jst(29, 9))
    night.say("b", "b says something", jst(29, 9))
    real = night.memories.forgotten_sources
    failed = []

    def flaky(who):
        if who == owner("b") and not failed:
            failed.append(who)
            raise RuntimeError("down")
        return real(who)

    night.memories.forgotten_sources = flaky
    run = night.run()
    assert failed and run.finished_at is not None and run.summary.failed_speakers == []
    assert len(night.memories.of("b")) == 1 and len(night.memories.of("a")) == 1
    json.dumps(run.summary.to_dict())  # plain JSON


def test_a_failed_diary_call_leaves_the_diary_empty_and_the_run_goes_on():
    night = Night()
    night.chat.fail.add("write_diary")
    night.say("a", "hello", jst(29, 9))
    run = night.run()
    assert run.diary == "" and run.summary.added and run.finished_at is not None
    assert run.summary.failures == 1


def test_the_diary_is_written_from_the_last_30_messages_of_the_window():
    night = Night()
    for i in range(45):
        night.say(f"u{i % 4}", f"line-{i:02d}", jst(29, 6) + timedelta(minutes=i))
    run = night.run()
    (transcript,) = [s for q, s in night.chat.seen if q == "write_diary"]
    lines = transcript.splitlines()
    assert len(lines) == DIARY_MESSAGES
    assert lines[0].endswith("line-15") and lines[-1].endswith("line-44")
    assert run.diary == ScriptedChat().diary_answer


@pytest.mark.parametrize(("setting", "language"), [(None, Language.JA), ("ja", Language.JA), ("en", Language.EN)])
def test_the_diary_is_asked_for_in_the_configured_language_japanese_by_default(setting, language):
    env = {} if setting is None else {"MEMORYBOT_DIARY_LANGUAGE": setting}
    configured = Settings.from_env(env).diary_language
    assert configured is language
    night = Night(diary_language=configured)
    night.say("u1", "we planned the autumn picnic", jst(29, 6))
    night.run()
    assert night.chat.diary_languages == [language]


def test_a_diary_language_the_bot_cannot_write_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="MEMORYBOT_DIARY_LANGUAGE must be one of: en, ja"):
        Settings.from_env({"MEMORYBOT_DIARY_LANGUAGE": "fr"})


def test_the_diary_prompt_and_the_offline_stand_in_follow_the_language():
    ja, en = diary_task("alice: hi", Language.JA), diary_task("alice: hi", Language.EN)
    assert "日本語" in ja.system and "in English" in en.system and "日本語" not in en.system
    offline = OfflineChatModel()
    assert offline.write_diary("alice: hi\nbob: yo", Language.EN).endswith("Today 2 people sent 2 messages.")
    assert offline.write_diary("alice: hi\nbob: yo").endswith("今日は2人が2件のメッセージを送った。")


# ---- forgetting sticks -----------------------------------------------------------


def _learned_from(night: Night, user: str, memory_id: str, text: str, *said):
    """A memory of ``user`` whose provenance is ``said`` (as extraction records it)."""
    learned = replace(
        memory(user, memory_id, text, at=jst(29, 9, 10)),
        sources=tuple(SourceRef(m.channel_id, m.message_id) for m in said),
    )
    night.memories.seed(learned)
    return learned


def test_a_forgotten_fact_is_not_learned_again_and_the_unrelated_morning_fact_is():
    night = Night()
    natto = night.say("a", "I love natto", jst(29, 9))
    every = night.say("a", "natto every morning", jst(29, 9, 5))
    night.say("a", "I play the cello", jst(29, 9, 30))  # unrelated, earlier than the forget
    _learned_from(night, "a", "aaaaa", "loves natto", natto, every)
    night.clock.now = jst(29, 12)
    assert commands.forget(night.memories, owner("a"), "aaaaa").outcome is commands.ForgetOutcome.FORGOTTEN
    night.say("a", "what a sunny afternoon", jst(29, 13))
    night.say("b", "b's morning natto", jst(29, 9))  # someone else's forget does not apply to b

    night.run()
    exchanges = night.exchanges()
    a_seen = [e for e in exchanges if "usera" in e]
    assert a_seen == ["usera: I play the cello\nusera: what a sunny afternoon"]
    assert any("b's morning natto" in e for e in exchanges)
    assert night.memories.get(owner("a"), "aaaaa") is None


def test_a_speaker_whose_every_message_taught_the_forgotten_memory_costs_no_model_call():
    night = Night()
    natto = night.say("a", "I love natto", jst(29, 9))
    _learned_from(night, "a", "aaaaa", "loves natto", natto)
    night.clock.now = jst(29, 12)
    commands.forget(night.memories, owner("a"), "aaaaa")
    run = night.run()
    assert night.exchanges() == [] and night.memories.of("a") == []
    assert run.summary.added == []


def test_only_a_forget_by_the_person_retires_sources_not_a_delete_by_extraction_or_decay():
    night = Night()
    natto = night.say("a", "I love natto", jst(29, 9))
    learned = _learned_from(night, "a", "aaaaa", "loves natto", natto)
    night.memories.apply(Change(Action.DELETE, learned, None, "jev verdict: delete"), actor=Actor.EXTRACTION)
    assert night.memories.forgotten_sources(owner("a")) == frozenset()
    night.run()
    assert night.exchanges() == ["usera: I love natto"]


def test_the_live_extraction_skips_a_forgotten_memorys_sources_too():
    night = Night()
    natto = night.say("a", "I love natto", jst(29, 9))
    _learned_from(night, "a", "aaaaa", "loves natto", natto)
    commands.forget(night.memories, owner("a"), "aaaaa")
    hello = night.say("a", "hello again", jst(29, 9, 1))
    extractor = Extractor(night.memories, night.jev, night.chat, clock=night.clock)
    extractor.run(Speaker("a", "usera"), owner("a").scope, [natto, hello])
    assert night.exchanges() == ["usera: hello again"]
    [added] = [e for e in night.memories.changes() if e.action is Action.ADD]
    assert added.sources == (SourceRef(hello.channel_id, hello.message_id),) == added.after.sources


def test_forgetting_one_memory_retires_every_line_of_the_exchange_it_was_decided_on():
    """What the README says forgetting drops: a memory's sources are all the person's lines of the
    exchange (the decision model judges the exchange as a whole, not line by line), so forgetting
    the sister also keeps the earlier line about work from ever being learned; a new line is."""
    night = Night()
    sony = night.say("a", "I work at Sony", jst(29, 9))
    osaka = night.say("a", "my sister lives in Osaka", jst(29, 9, 2))
    night.run()
    [learned] = night.memories.of("a")
    assert learned.sources == tuple(SourceRef(m.channel_id, m.message_id) for m in (sony, osaka))

    commands.forget(night.memories, owner("a"), learned.memory_id)
    again = night.say("a", "I still work at Sony", jst(30, 9))
    night.jev.calls.clear()
    night.run(NOW + timedelta(days=1))
    assert night.exchanges() == ["usera: I still work at Sony"]  # the next night: only the new line
    extractor = Extractor(night.memories, night.jev, night.chat, clock=night.clock)
    night.jev.calls.clear()
    extractor.run(Speaker("a", "usera"), owner("a").scope, [sony, osaka])  # a live extraction of the old lines
    assert night.exchanges() == []
    assert [m.sources for m in night.memories.of("a")] == [(SourceRef(again.channel_id, again.message_id),)]


# ---- decay -------------------------------------------------------------------------


def _stale(night: Night, count: int) -> list[str]:
    ids = []
    for i in range(count):
        memory_id = f"s{i:04d}"[-5:]
        at = NOW - STALE_AFTER - timedelta(days=count - i)  # s0000 is the oldest
        night.memories.seed(memory(f"old{i}", memory_id, f"old fact {i}", at=at))
        ids.append(memory_id)
    return ids


def test_decay_reviews_the_20_oldest_and_deletes_only_on_an_explicit_delete():
    night = Night()
    ids = _stale(night, 25)
    night.memories.seed(memory("fresh", "fresh", "recent fact", at=NOW - STALE_AFTER + timedelta(days=2)))
    night.jev.default_review = Verdict.DELETE
    run = night.run()

    reviewed = night.jev.asked("review")
    assert sorted(reviewed) == ids[:STALE_REVIEWS_PER_NIGHT]
    assert run.summary.decayed == ids[:STALE_REVIEWS_PER_NIGHT]  # oldest first
    assert run.summary.deleted == []  # extraction's deletes are a separate list
    remaining = sorted(m.memory_id for m in night.memories.rows.values())
    assert remaining == sorted(ids[STALE_REVIEWS_PER_NIGHT:] + ["fresh"])
    deletes = [e for e in night.memories.changes() if e.action is Action.DELETE]
    assert len(deletes) == STALE_REVIEWS_PER_NIGHT
    assert all(e.actor is Actor.NIGHTLY and e.run_id == run.run_id and e.before is not None for e in deletes)

    night.run(NOW + timedelta(days=1))  # the next night reviews the rest
    assert sorted(night.jev.asked("review")[STALE_REVIEWS_PER_NIGHT:]) == ids[STALE_REVIEWS_PER_NIGHT:]


def test_a_failed_or_ambiguous_review_keeps_the_record_and_it_is_reviewed_again_next_night():
    night = Night()
    ids = _stale(night, 4)
    night.jev.fail.add(ids[0])  # the call raises
    night.jev.reviews = {ids[1]: "maybe", ids[2]: Verdict.UPDATE, ids[3]: Verdict.KEEP}  # not allowed / keep
    run = night.run()
    assert run.summary.decayed == []
    assert sorted(m.memory_id for m in night.memories.rows.values()) == ids
    assert night.memories.changes() == []
    assert run.summary.failures == 3  # raised, unknown verdict, verdict not allowed in a review

    night.run(NOW + timedelta(days=1))
    assert sorted(night.jev.asked("review")) == sorted(ids * 2)


def test_a_stale_record_changed_meanwhile_is_not_decayed():
    night = Night()
    (memory_id,) = _stale(night, 1)
    night.jev.default_review = Verdict.DELETE
    original = night.memories.rows[(owner("old0"), memory_id)]

    def touch_first(change):  # a concurrent update lands between the review and the delete
        night.memories.rows[(owner("old0"), memory_id)] = memory("old0", memory_id, "touched", at=NOW)
        night.memories.fail_apply = lambda change: False
        return False

    night.memories.fail_apply = touch_first
    run = night.run()
    assert run.summary.decayed == [] and run.summary.conflicts == 1
    assert night.memories.rows[(owner("old0"), memory_id)].text == "touched" != original.text


# ---- the run record and the day claim ---------------------------------------------


def test_a_second_invocation_for_the_same_day_does_nothing():
    night = Night()
    night.say("a", "hello", jst(29, 9))
    first = night.run()
    calls = night.model_calls()
    ledger = len(night.memories.ledger)
    assert night.run() is None
    assert night.run(NOW + timedelta(minutes=7)) is None  # a late redelivery: same day
    assert night.model_calls() == calls and len(night.memories.ledger) == ledger
    assert list(night.runs.runs) == [first.run_id]
    second = night.run(NOW + timedelta(days=1))
    assert second.run_id == first.run_id + 1 and second.day_label == "2026-11-30"


def test_the_run_record_holds_label_diary_summary_and_times():
    night = Night(jev=ScriptedJev(verdicts={"bbbbb": Verdict.DELETE, "ccccc": Verdict.UPDATE}))
    night.memories.seed(
        memory("a", "bbbbb", "old job", at=jst(29, 1)), memory("a", "ccccc", "lives in Osaka", at=jst(29, 1))
    )
    night.say("a", "I quit and moved", jst(29, 9))
    run = night.run()
    stored = night.runs.get(run.run_id)
    assert stored == run and stored.day_label == "2026-11-29" and not stored.rolled_back
    assert stored.started_at <= stored.finished_at
    assert stored.diary == ScriptedChat().diary_answer
    summary = stored.summary
    assert summary.deleted == ["bbbbb"] and summary.updated == ["ccccc"] and len(summary.added) == 1
    assert summary.decayed == [] and summary.model_calls == night.model_calls()
    record = json.loads(json.dumps(run_record(stored), ensure_ascii=False))
    assert record["runId"] == run.run_id and record["dayLabel"] == "2026-11-29" and record["rolledBack"] is False


def test_a_quiet_night_still_records_a_run_and_reviews_stale_records():
    night = Night()
    _stale(night, 2)
    run = night.run()
    assert run.diary == "" and run.summary.speakers == 0
    assert len(night.jev.asked("review")) == 2 and night.chat.seen == []


# ---- bounded by design ---------------------------------------------------------------


def test_max_model_calls_follows_the_caps():
    one_decision = 1 + 1 + 10 + 1  # worth, the decision, ten rewrites, the add's text
    per_record = 1 + 10 + 1 + 10 + 1  # worth, ten verdicts, the add, ten rewrites, the add's text
    assert max_model_calls(0) == max_model_calls(0, per_record=True) == STALE_REVIEWS_PER_NIGHT + 1
    assert max_model_calls(7) == 7 * CHUNKS_PER_SPEAKER * one_decision + STALE_REVIEWS_PER_NIGHT + 1
    assert max_model_calls(7, per_record=True) == 7 * CHUNKS_PER_SPEAKER * per_record + STALE_REVIEWS_PER_NIGHT + 1


@pytest.mark.parametrize("per_record", [False, True])
def test_model_calls_stay_within_the_bound_on_a_busy_day(per_record):
    """Every question maxed out: ten memories each, every verdict an update, an add every time;
    one decision a chunk, or (a Jev service without /decide) a verdict a record and the add."""
    speakers, per_speaker = 30, 50  # 50 messages each: nine chunks, capped to five
    jev = ScriptedJev(worth=0.9, add=0.9) if per_record else OneDecisionJev(worth=0.9, add=0.9)
    night = Night(jev=jev, speaker_concurrency=8)
    night.jev.default_verdict = Verdict.UPDATE
    night.jev.default_review = Verdict.KEEP
    for s in range(speakers):
        for k in range(10):
            night.memories.seed(memory(f"sp{s}", f"m{k:04d}"[-5:], f"fact {k}", at=jst(29, 1)))
        for i in range(per_speaker):
            night.say(f"sp{s}", f"sp{s} message {i}", jst(29, 4) + timedelta(minutes=i, seconds=s))
    _stale(night, 25)

    run = night.run()
    actual = night.model_calls()
    bound = max_model_calls(speakers, per_record=per_record)
    assert actual <= bound
    assert actual == bound  # every cap reached: the bound is tight, not loose arithmetic
    assert run.summary.model_calls == actual
    uncapped = speakers * -(-per_speaker // CHUNK_MESSAGES) * (23 if per_record else 13) + 25 + 1
    assert uncapped > bound


def test_a_run_whose_worker_failed_is_taken_over_by_the_retry_and_keeps_what_it_did():
    night = Night(jev=ScriptedJev(add=0.9))
    night.memories.seed(memory("old", "sssss", "exam next week", at=jst(29, 12) - timedelta(days=40)))
    night.jev.reviews = {"sssss": Verdict.DELETE}
    night.say("a", "I started learning the cello", jst(29, 9))
    night.say("b", "I adopted a cat", jst(29, 10))
    real_finish = night.runs.finish
    night.runs.finish = lambda run: (_ for _ in ()).throw(RuntimeError("store down"))  # dies at the very end
    with pytest.raises(RuntimeError):
        night.run()
    [abandoned] = night.runs.runs.values()
    assert abandoned.finished_at is None and not abandoned.in_progress(night.clock.now)  # released for the retry
    first_changes = [e.memory_ids[0] for e in night.memories.changes()]
    assert len(first_changes) == 3  # two adds and a decay

    night.runs.finish = real_finish
    resumed = night.run(NOW + timedelta(minutes=2))  # the scheduler's retry
    assert resumed.run_id == abandoned.run_id and resumed.finished_at is not None
    assert list(night.runs.runs) == [abandoned.run_id]
    summary = resumed.summary
    assert "sssss" in summary.decayed and len(summary.added) >= 2
    assert set(first_changes) <= set(summary.added + summary.decayed)
    assert night.run(NOW + timedelta(minutes=3)) is None  # finished now: nothing more


def test_no_stale_record_starves_behind_more_than_20_kept_ones():
    """Each night 20 reviews, every answer KEEP: a kept record goes behind those not yet
    reviewed, so over the nights every stale record is reviewed in turn, oldest first."""
    night = Night()
    ids = _stale(night, 45)
    night.jev.default_review = Verdict.KEEP
    reviewed_by_night = []
    for n in range(3):
        night.clock.now = NOW + timedelta(days=n, minutes=1)
        before = len(night.jev.asked("review"))
        night.run(NOW + timedelta(days=n))
        reviewed_by_night.append(list(night.jev.asked("review")[before:]))
    assert [len(r) for r in reviewed_by_night] == [STALE_REVIEWS_PER_NIGHT] * 3
    assert sorted(reviewed_by_night[0]) == ids[:20] and sorted(reviewed_by_night[1]) == ids[20:40]
    # The third night: the last five never reviewed, then 15 of those kept longest ago (night one's).
    third = set(reviewed_by_night[2])
    assert set(ids[40:]) <= third and len(third - set(ids[40:]) & set(ids[:20])) == 15
    assert set(ids) <= {i for r in reviewed_by_night for i in r}
    assert night.memories.changes() == []  # a review mark is not a change of the memory


def test_ended_memories_are_reviewed_first_within_the_same_cap_and_a_kept_one_leaves_the_ended_set():
    night = Night()
    stale = _stale(night, 25)
    today = NOW.astimezone(JST).date()
    fresh = NOW - timedelta(days=3)  # not stale: only its end makes it due
    ended = [
        dataclasses.replace(memory(f"p{i}", f"e{i}222", f"trip {i}", at=fresh), valid_until=today - timedelta(days=i))
        for i in (1, 2, 3)
    ]
    going_on = dataclasses.replace(memory("p9", "e9222", "trip 9", at=fresh), valid_until=today)  # its last day
    night.memories.seed(*ended, going_on)
    night.jev.default_review = Verdict.KEEP
    night.clock.now = NOW + timedelta(minutes=1)
    night.run()
    reviewed = night.jev.asked("review")
    assert len(reviewed) == STALE_REVIEWS_PER_NIGHT
    assert reviewed[:3] == ["e3222", "e2222", "e1222"]  # the ended first, the earliest ended first
    assert sorted(reviewed[3:]) == stale[:17]  # then the stale ones, in the same cap of 20
    assert "e9222" not in reviewed
    # Kept: looked at since its end, so not first again; the next night reviews the stale rest.
    night.clock.now = NOW + timedelta(days=1, minutes=1)
    night.run(NOW + timedelta(days=1))
    second = night.jev.asked("review")[STALE_REVIEWS_PER_NIGHT:]
    assert second[:1] == ["e9222"]  # its end came since: first tonight
    assert set(stale[17:]) <= set(second) and not {"e1222", "e2222", "e3222"} & set(second)


# ---- what the night learns is dated by the line it came from --------------------


def test_a_nightly_memory_is_dated_by_the_line_it_came_from_and_its_end_counted_from_that_day():
    chat = OfflineChatModel()
    chat.zone = JST
    night = Night(chat=chat)
    night.clock.now = NOW + timedelta(minutes=2)  # the run's own time, the next day
    said = night.say("a", "I'm in Fukuoka for the next 2 weeks", jst(29, 21, 5))
    night.run()
    [learned] = night.memories.of("a")
    assert learned.created_at == learned.updated_at == said.created_at  # 21:05 on the 29th, not the run's 03:02
    assert learned.valid_until == date(2026, 12, 13)  # two weeks from the 29th (the run's day would give the 14th)
    [row] = night.memories.changes()
    assert row.actor is Actor.NIGHTLY and row.after == learned
