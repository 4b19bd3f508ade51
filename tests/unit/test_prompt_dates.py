"""Dates in the prompts, in the deployment's time zone: the reply's system message says today's
date and each memory's (learned, or last changed, and a plan's end), in two time zones."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from fakes import memory, message
from memorybot.core.domain import MemoryDraft, Speaker
from memorybot.core.prompts import build_reply_prompt

NOW = datetime(2026, 11, 30, 16, 30, tzinfo=UTC)  # Monday 30 November in Paris, Tuesday 1 December in Tokyo
LEARNED = dataclasses.replace(memory("u1", "tea22", "likes tea", at=datetime(2026, 3, 2, 20, 0, tzinfo=UTC)))
CHANGED = dataclasses.replace(
    memory("u1", "kyo22", "moved to Kyoto", at=datetime(2026, 1, 5, tzinfo=UTC)),
    updated_at=datetime(2026, 11, 17, 23, 0, tzinfo=UTC),
    valid_until=None,
)
PLAN = dataclasses.replace(memory("u1", "fuk22", "in Fukuoka for a month", at=NOW), valid_until=date(2026, 12, 24))


def system(zone) -> str:
    talk = [message("u1", "hi", name="alice", at=NOW)]
    return build_reply_prompt(Speaker("u1", "alice"), [LEARNED, CHANGED, PLAN], talk, now=NOW, zone=zone)[0].content


def test_the_reply_says_today_in_the_deployments_time_zone():
    assert "Today is Tue 2026-12-01 JST." in system(ZoneInfo("Asia/Tokyo"))
    assert "Today is Mon 2026-11-30 CET." in system(ZoneInfo("Europe/Paris"))


def test_each_memory_says_when_it_was_learned_or_last_changed_and_a_plan_its_end():
    tokyo, paris = system(ZoneInfo("Asia/Tokyo")), system(ZoneInfo("Europe/Paris"))
    assert '<memory id="tea22" on="2026-03-03">likes tea</memory>' in tokyo  # 20:00 UTC is the next day there
    assert '<memory id="tea22" on="2026-03-02">likes tea</memory>' in paris
    assert '<memory id="kyo22" on="2026-11-18">moved to Kyoto</memory>' in tokyo  # last changed
    assert '<memory id="fuk22" on="2026-11-30" until="2026-12-24">' in paris
    assert "learned it or it last changed" in tokyo and "you told me in March" in tokyo  # how to use them


def test_without_a_time_the_prompt_has_no_dates():
    talk = [message("u1", "hi", name="alice", at=NOW)]
    content = build_reply_prompt(Speaker("u1", "alice"), [LEARNED], talk)[0].content
    assert "Today is" not in content and "on=" not in content


def test_each_line_of_an_exchange_carries_its_own_time_under_its_day_in_two_zones():
    from memorybot.core import quoting
    from memorybot.core.domain import JST, Exchange

    late = message("u1", "I moved here last week", name="alice", at=datetime(2026, 11, 29, 23, 50, tzinfo=JST))
    after = message("u1", "and my exam is on Friday", name="alice", at=datetime(2026, 11, 30, 0, 10, tzinfo=JST))
    exchange = Exchange.of(Speaker("u1", "alice"), late.scope, [late, after])
    tokyo = quoting.exchange_block(exchange, ZoneInfo("Asia/Tokyo"))
    assert (
        tokyo.index("<day>2026-11-29 Sun</day>") < tokyo.index('at="23:50"') < tokyo.index("<day>2026-11-30 Mon</day>")
    )
    assert 'at="00:10"' in tokyo
    paris = quoting.exchange_block(exchange, ZoneInfo("Europe/Paris"))
    assert paris.count("<day>") == 1 and 'at="15:50"' in paris and 'at="16:10"' in paris  # one day in Paris
    assert "<day>" not in quoting.exchange_block(exchange)  # no zone: no dates


# ---- the LLM backends' decision and writing prompts, through the factory's dating, over HTTP


def _dated_models(server, zone):
    from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
    from retrying import quick_retrier

    client = OpenAICompatibleClient(server.url, "m", timeout_seconds=2.0, api_key="k", retrier=quick_retrier())
    jev, chat = OpenAIDecisionModel(client), OpenAIChatModel(client)
    for model in (jev, chat):
        model.zone, model.clock = zone, lambda: datetime(2026, 11, 30, 18, 0, tzinfo=UTC)  # the 03:00 JST run
    return jev, chat


def _user(server) -> str:
    from loopback.openai_server import OpenAIServer

    return "\n".join(m["content"] for m in server.last(OpenAIServer.COMPLETIONS_PATH).json["messages"])


def test_a_nightly_decision_dates_each_line_by_its_own_time_and_says_today_in_two_zones():
    from loopback.openai_server import OpenAIServer
    from memorybot.core.domain import JST, Exchange

    said = message("u1", "I moved here last week", name="alice", at=datetime(2026, 11, 29, 21, 5, tzinfo=JST))
    exchange = Exchange.of(Speaker("u1", "alice"), said.scope, [said])
    with OpenAIServer() as server:
        for zone, today, day, at in (
            (ZoneInfo("Asia/Tokyo"), "Today is Tue 2026-12-01 JST.", "<day>2026-11-29 Sun</day>", 'at="21:05"'),
            (ZoneInfo("Europe/Paris"), "Today is Mon 2026-11-30 CET.", "<day>2026-11-29 Sun</day>", 'at="13:05"'),
        ):
            jev, _ = _dated_models(server, zone)
            server.reply('{"probability": 0.9}')
            jev.worth(exchange)
            sent = _user(server)
            assert today in sent and day in sent and at in sent  # the line's time, not the run's (03:00)
            assert "Resolve relative dates" not in sent  # the decision reads times, the writer resolves


def test_the_writing_task_asks_for_text_and_valid_until_and_takes_either_answer():
    from loopback.openai_server import OpenAIServer
    from memorybot.core.domain import JST, Exchange

    said = message(
        "u1", "I'm in Fukuoka for the next two weeks", name="alice", at=datetime(2026, 11, 24, 9, tzinfo=JST)
    )
    exchange = Exchange.of(Speaker("u1", "alice"), said.scope, [said])
    with OpenAIServer() as server:
        _, chat = _dated_models(server, ZoneInfo("Asia/Tokyo"))
        server.reply('{"text": "Staying in Fukuoka until around 2026-12-08", "validUntil": "2026-12-08"}')
        assert chat.write_memory(exchange, None) == MemoryDraft(
            "Staying in Fukuoka until around 2026-12-08", date(2026, 12, 8)
        )
        assert '"validUntil"' in _user(server) and "around 2026-11-17" in _user(server)
        server.reply("Staying in Fukuoka for two weeks from 2026-11-24")  # a model that ignores the format
        assert chat.write_memory(exchange, None) == MemoryDraft("Staying in Fukuoka for two weeks from 2026-11-24")


def test_the_one_decision_dates_lines_and_memories_in_the_configured_zone_and_jst_without_one():
    from loopback.openai_server import OpenAIServer
    from memorybot.core import prompts
    from memorybot.core.domain import JST, Exchange

    said = message("u1", "I moved out of Kyoto last week", name="alice", at=datetime(2026, 11, 29, 21, 5, tzinfo=JST))
    exchange = Exchange.of(Speaker("u1", "alice"), said.scope, [said])
    with OpenAIServer() as server:
        jev, _ = _dated_models(server, ZoneInfo("Europe/Paris"))
        server.reply('{"verdicts": {"tea22": "keep", "kyo22": "delete"}, "add": 0.1}')
        decision = jev.decide(exchange, [LEARNED, CHANGED])
        sent = _user(server)
    assert decision.add == 0.1 and set(decision.verdicts) == {"tea22", "kyo22"}
    assert "Today is Mon 2026-11-30 CET." in sent and "<day>2026-11-29 Sun</day>" in sent and 'at="13:05"' in sent
    assert '<memory id="tea22" on="2026-03-02">' in sent and '<memory id="kyo22" on="2026-11-18">' in sent  # Paris
    undated = prompts.decide_question(exchange, [LEARNED]).user  # built outside the factory: issue 24's prompt
    assert "Today is" not in undated and "<day>" not in undated and '<memory id="tea22" on="2026-03-03">' in undated
