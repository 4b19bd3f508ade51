"""The writer's end (validUntil) reaching the stored record through the extraction path: the
answer in both forms over a real adapter, an update that moves or clears the end, and an end that
cannot be one (not a date, before the record was learned) giving no end, never a failed write.
A nightly run dates what it learns by the line, not by the run."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from fakes import Clock, FakeMemoryStore, ScriptedChat, ScriptedJev, memory, message, owner, speaker
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel, plan_end
from memorybot.core.record.domain import GLOBAL_SCOPE, JST, Action, Actor, Embedding, Exchange, MemoryDraft, Verdict
from memorybot.core.turn.extraction import Extractor

ALICE = "100"
ME = speaker(ALICE, "alice")
MINE = owner(ALICE)
TOKYO = ZoneInfo("Asia/Tokyo")
SAID = datetime(2026, 11, 24, 10, 0, tzinfo=JST)  # a Tuesday morning in Tokyo
PLAN = "I'm in Fukuoka for the next two weeks"


def said(text=PLAN, at=SAID):
    return [message(ALICE, text, name="alice", at=at)]


def stored(store):
    [only] = store.of(ALICE)
    return only


def over_http(server, zone=TOKYO):
    """The factory's OpenAI-compatible models against the loopback server, dated in ``zone``."""
    from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
    from retrying import quick_retrier

    client = OpenAICompatibleClient(server.url, "m", timeout_seconds=2.0, api_key="k", retrier=quick_retrier())
    jev, chat = OpenAIDecisionModel(client), OpenAIChatModel(client)
    for model in (jev, chat):
        model.zone, model.clock = zone, lambda: SAID
    return jev, chat


def writer_answers(server, written: str) -> None:
    """Worth yes, and ``written`` for the writing task (the profile is empty: no decision asked)."""
    server.responder = lambda body: (
        written if "Write the new memory" in json.dumps(body, ensure_ascii=False) else '{"probability": 0.9}'
    )


@pytest.mark.parametrize(
    ("answer", "text", "end"),
    [
        (
            '{"text": "Staying in Fukuoka until around 2026-12-08", "validUntil": "2026-12-08"}',
            "Staying in Fukuoka until around 2026-12-08",
            date(2026, 12, 8),
        ),
        ("Staying in Fukuoka for two weeks from 2026-11-24", "Staying in Fukuoka for two weeks from 2026-11-24", None),
        ('{"text": "Likes green tea", "validUntil": null}', "Likes green tea", None),
        # not a date, and a last day before the line's day: no end, the memory still written
        ('{"text": "Has an exam on Friday", "validUntil": "Friday"}', "Has an exam on Friday", None),
        ('{"text": "Has an exam", "validUntil": "2026-11-20"}', "Has an exam", None),
        ('{"text": "Has an exam", "validUntil": "2026-02-30"}', "Has an exam", None),
    ],
)
def test_the_writers_answer_in_either_form_reaches_the_stored_record(answer, text, end):
    from loopback.openai_server import OpenAIServer

    store = FakeMemoryStore()
    with OpenAIServer() as server:
        writer_answers(server, answer)
        jev, chat = over_http(server)
        result = Extractor(store, jev, chat, clock=lambda: SAID, zone=TOKYO).run(ME, GLOBAL_SCOPE, said())
    assert result.failures == 0 and len(result.added) == 1
    memory_now = stored(store)
    assert (memory_now.text, memory_now.valid_until) == (text, end)
    [row] = store.changes()
    assert row.action is Action.ADD and row.after == memory_now  # the ledger's state carries the end too


def test_the_loopback_model_follows_the_dated_format_and_its_end_is_stored():
    from loopback.openai_server import OpenAIServer

    store = FakeMemoryStore()
    with OpenAIServer(default_text="Staying in Fukuoka until around 2026-12-08") as server:
        server.default_valid_until = "2026-12-08"
        jev, chat = over_http(server)
        Extractor(store, jev, chat, clock=lambda: SAID, zone=TOKYO).run(ME, GLOBAL_SCOPE, said())
    assert stored(store).valid_until == date(2026, 12, 8)


# ---- the core's rules on a draft's end, with the port's fakes

UNTIL = date(2026, 12, 8)
VECTOR = Embedding("m@2", (1.0, 0.0))


def planned(store):
    plan = replace(memory(ALICE, "fuk22", "Staying in Fukuoka", at=SAID), valid_until=UNTIL, embedding=VECTOR)
    store.seed(plan)
    return plan


def rewrite(store, draft: MemoryDraft, *, zone=TOKYO):
    jev = ScriptedJev(verdicts={"fuk22": Verdict.UPDATE}, add=0.0)
    chat = ScriptedChat(texts={"fuk22": draft})
    clock = Clock(SAID + timedelta(days=3))
    return Extractor(store, jev, chat, clock=clock, zone=zone).run(ME, GLOBAL_SCOPE, said("staying a week longer"))


@pytest.mark.parametrize(
    ("draft", "end"),
    [
        (MemoryDraft("Staying in Fukuoka", date(2026, 12, 15)), date(2026, 12, 15)),  # the end moves
        (MemoryDraft("Lives in Fukuoka now"), None),  # the end is cleared: a durable fact now
        (MemoryDraft("Staying in Fukuoka", date(2026, 11, 20)), None),  # before it was learned: no end
    ],
)
def test_an_update_moves_or_clears_the_end_and_the_ledger_row_says_so(draft, end):
    store = FakeMemoryStore()
    plan = planned(store)
    result = rewrite(store, draft)
    assert result.updated == ["fuk22"] and result.failures == 0
    after = store.get(MINE, "fuk22")
    assert (after.text, after.valid_until) == (draft.text, end)
    assert after.created_at == plan.created_at and after.updated_at > plan.updated_at
    [row] = store.changes()
    assert row.action is Action.UPDATE and row.before == plan and row.after == after
    if after.text == plan.text:
        assert after.embedding == VECTOR  # only the end moved: the text's vector stays


def test_the_same_text_and_the_same_end_is_no_change():
    store = FakeMemoryStore()
    plan = planned(store)
    result = rewrite(store, MemoryDraft("Staying in Fukuoka", UNTIL))
    assert result.updated == [] and store.get(MINE, "fuk22") == plan and store.changes() == []


def test_an_end_is_checked_against_the_learned_day_in_the_deployments_zone():
    """Learned at 23:30 UTC on 24 November: 25 November in Tokyo, still the 24th in New York."""
    late = datetime(2026, 11, 24, 23, 30, tzinfo=UTC)
    for zone, kept in ((ZoneInfo("America/New_York"), True), (TOKYO, False)):
        store = FakeMemoryStore()
        chat = ScriptedChat(texts={None: MemoryDraft("Has an exam today", date(2026, 11, 24))})
        Extractor(store, ScriptedJev(add=1.0), chat, clock=lambda: late, zone=zone).run(
            ME, GLOBAL_SCOPE, said("I have an exam today", at=late)
        )
        assert stored(store).valid_until == (date(2026, 11, 24) if kept else None)


# ---- the offline stand-in's ends, and the nightly run's dating by the line


@pytest.mark.parametrize(
    ("line", "end"),
    [
        ("I'm in Fukuoka for the next 2 weeks", date(2026, 12, 8)),
        ("I'm in Fukuoka for the next two weeks", date(2026, 12, 8)),
        ("I'm staying with my sister for a month", date(2026, 12, 24)),
        ("I'm off work until 2026-12-01", date(2026, 12, 1)),
        ("これから3週間、福岡にいる予定", date(2026, 12, 15)),
        ("2026-12-01まで休むつもり", date(2026, 12, 1)),
        ("I love green tea", None),
        ("猫が好き", None),
    ],
)
def test_the_offline_writer_ends_a_plan_counted_from_the_lines_day(line, end):
    assert plan_end(line, SAID.date()) == end


def test_a_nightly_memory_is_dated_by_its_line_and_its_end_counted_from_the_lines_day():
    line_at = datetime(2026, 11, 29, 23, 50, tzinfo=JST)  # Sunday night
    run_at = datetime(2026, 11, 30, 3, 0, tzinfo=JST)  # the 03:00 run, the next day
    chat = OfflineChatModel()
    chat.zone = TOKYO
    for actor, dated in ((Actor.NIGHTLY, line_at), (Actor.EXTRACTION, run_at)):
        store = FakeMemoryStore()
        Extractor(store, OfflineDecisionModel(), chat, clock=lambda: run_at, zone=TOKYO).run(
            ME, GLOBAL_SCOPE, said("I'm in Fukuoka for the next 2 weeks", at=line_at), actor=actor
        )
        learned = stored(store)
        assert learned.created_at == learned.updated_at == dated
        assert learned.valid_until == date(2026, 12, 13)  # 29 November + 14 days, not the run's 30th


def test_a_nightly_update_is_dated_by_its_line_but_never_before_the_records_last_change():
    line_at = datetime(2026, 11, 29, 21, 0, tzinfo=JST)
    run_at = datetime(2026, 11, 30, 3, 0, tzinfo=JST)
    for last_change, dated in ((line_at - timedelta(days=5), line_at), (line_at + timedelta(hours=1), None)):
        store = FakeMemoryStore()
        before = memory(ALICE, "fuk22", "Staying in Fukuoka", at=last_change)
        store.seed(before)
        jev = ScriptedJev(verdicts={"fuk22": Verdict.UPDATE}, add=0.0)
        Extractor(store, jev, ScriptedChat(), clock=lambda: run_at).run(
            ME, GLOBAL_SCOPE, said("moving on to Kagoshima", at=line_at), actor=Actor.NIGHTLY
        )
        assert store.get(MINE, "fuk22").updated_at == (dated or last_change)


def test_the_offline_writer_moves_a_plans_end_or_keeps_it_when_the_line_gives_none():
    chat = OfflineChatModel()
    chat.zone = TOKYO
    plan = replace(memory(ALICE, "fuk22", "[offline] Is in Fukuoka", at=SAID), valid_until=UNTIL)
    longer = Exchange.of(ME, GLOBAL_SCOPE, said("I'm in Fukuoka for the next 3 weeks"))
    still = Exchange.of(ME, GLOBAL_SCOPE, said("I'm still in Fukuoka"))
    assert chat.write_memory(longer, plan).valid_until == date(2026, 12, 15)
    assert chat.write_memory(still, plan).valid_until == UNTIL
    assert chat.write_memory(still, None).valid_until is None
