"""Dates in the prompts, in the deployment's time zone: the reply's system message says today's
date and each memory's (learned, or last changed, and a plan's end), in two time zones."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from fakes import memory, message
from memorybot.core.prompting.prompts import build_reply_prompt
from memorybot.core.record.domain import MemoryDraft, Speaker

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
    assert "Today is Tue 2026-12-01." in system(ZoneInfo("Asia/Tokyo"))
    assert "Today is Mon 2026-11-30." in system(ZoneInfo("Europe/Paris"))


def test_each_memory_is_under_the_month_it_was_learned_or_last_changed_and_a_plan_says_its_end():
    tokyo, paris = system(ZoneInfo("Asia/Tokyo")), system(ZoneInfo("Europe/Paris"))
    assert "under the month you learned or last changed each" in paris
    # newest first, each month once: the plan (learned 30 November in Paris), the move (last changed in
    # November), the tea (March); in Tokyo the plan was learned on 1 December
    listed = paris[paris.index("<memories>") :]
    assert listed.count("2026-11:") == 1 and listed.count("2026-03:") == 1
    assert '2026-12:\n<memory id="fuk22"' in tokyo and "2026-12:" not in paris
    assert (
        listed.index("2026-11:")
        < listed.index('<memory id="fuk22" until="2026-12-24">')
        < listed.index('<memory id="kyo22">moved to Kyoto</memory>')  # last changed 2026-11-18
        < listed.index("2026-03:")
        < listed.index('<memory id="tea22">likes tea</memory>')
    )
    # 20:00 UTC on 31 March is April in Tokyo, still March in Paris
    late = dataclasses.replace(LEARNED, updated_at=datetime(2026, 3, 31, 20, 0, tzinfo=UTC))
    talk = [message("u1", "hi", name="alice", at=NOW)]
    for zone, month in ((ZoneInfo("Asia/Tokyo"), "2026-04:"), (ZoneInfo("Europe/Paris"), "2026-03:")):
        prompt = build_reply_prompt(Speaker("u1", "alice"), [late], talk, now=NOW, zone=zone)[0].content
        assert f'{month}\n<memory id="tea22">likes tea</memory>' in prompt


def test_without_a_time_the_prompt_has_no_dates():
    talk = [message("u1", "hi", name="alice", at=NOW)]
    content = build_reply_prompt(Speaker("u1", "alice"), [LEARNED, PLAN], talk)[0].content
    assert "Today is" not in content and "2026-" not in content and "until=" not in content


def _lines(*times):
    from memorybot.core.record.domain import Exchange

    said = [message("u1", f"line {i}", name="alice", at=at) for i, at in enumerate(times)]
    return Exchange.of(Speaker("u1", "alice"), said[0].scope, said)


def _times(block: str) -> list[str | None]:
    import re

    return [m[1] for m in re.finditer(r'<message from="speaker"(?: at="([^"]+)")?>', block)]


def test_a_line_carries_its_time_where_a_reader_could_not_tell_it_in_two_zones():
    from memorybot.core.prompting import quoting
    from memorybot.core.record.dates import PromptTime
    from memorybot.core.record.domain import JST

    night = datetime(2026, 11, 30, 3, 0, tzinfo=JST)  # the nightly run
    exchange = _lines(
        datetime(2026, 11, 29, 21, 5, tzinfo=JST),
        datetime(2026, 11, 29, 21, 40, tzinfo=JST),  # within the hour after the line that says its time
        datetime(2026, 11, 29, 23, 50, tzinfo=JST),  # more than an hour later
        datetime(2026, 11, 30, 0, 10, tzinfo=JST),  # twenty minutes on, but another day
    )
    tokyo = quoting.exchange_block(exchange, PromptTime(night, ZoneInfo("Asia/Tokyo")))
    assert _times(tokyo) == ["2026-11-29 Sun 21:05", None, "2026-11-29 Sun 23:50", "2026-11-30 Mon 00:10"]
    paris = quoting.exchange_block(exchange, PromptTime(night, ZoneInfo("Europe/Paris")))  # 13:05 ... 16:10
    assert _times(paris) == ["2026-11-29 Sun 13:05", None, "2026-11-29 Sun 15:50", None]
    assert _times(quoting.exchange_block(exchange)) == [None] * 4  # no time: no dates


def test_a_live_turns_lines_carry_no_time_and_an_older_line_does():
    from memorybot.core.prompting import quoting
    from memorybot.core.record.dates import PromptTime
    from memorybot.core.record.domain import JST

    now = datetime(2026, 11, 30, 21, 0, tzinfo=JST)
    live = _lines(now - timedelta(minutes=50), now - timedelta(minutes=10), now)
    assert _times(quoting.exchange_block(live, PromptTime(now, JST))) == [None, None, None]
    resumed = _lines(now - timedelta(hours=3), now - timedelta(minutes=5), now)  # the same day, hours before
    assert _times(quoting.exchange_block(resumed, PromptTime(now, JST))) == [
        "2026-11-30 Mon 18:00",
        "2026-11-30 Mon 20:55",
        None,
    ]
    after_midnight = datetime(2026, 12, 1, 0, 5, tzinfo=JST)
    late = _lines(after_midnight - timedelta(minutes=20), after_midnight)  # twenty minutes ago, yesterday
    assert _times(quoting.exchange_block(late, PromptTime(after_midnight, JST))) == [
        "2026-11-30 Mon 23:45",
        "2026-12-01 Tue 00:05",  # after a line that says its time, on another day
    ]


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
    from memorybot.core.record.domain import JST, Exchange

    said = message("u1", "I moved here last week", name="alice", at=datetime(2026, 11, 29, 21, 5, tzinfo=JST))
    exchange = Exchange.of(Speaker("u1", "alice"), said.scope, [said])
    with OpenAIServer() as server:
        for zone, today, at in (
            (ZoneInfo("Asia/Tokyo"), "Today is Tue 2026-12-01.", 'at="2026-11-29 Sun 21:05"'),
            (ZoneInfo("Europe/Paris"), "Today is Mon 2026-11-30.", 'at="2026-11-29 Sun 13:05"'),
        ):
            jev, _ = _dated_models(server, zone)
            server.reply('{"verdicts": {"tea22": "keep"}, "add": 0.1}')
            jev.decide(exchange, [LEARNED])
            sent = _user(server)
            assert today in sent and at in sent  # the line's day and time, not the run's (03:00)
            server.reply('{"probability": 0.9}')
            jev.worth(exchange)
            assert "Today is" not in _user(server) and "at=" not in _user(server)  # the gate: undated


def test_the_writing_task_asks_for_text_and_valid_until_and_takes_either_answer():
    from loopback.openai_server import OpenAIServer
    from memorybot.core.record.domain import JST, Exchange

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
        sent = _user(server)
        assert '"validUntil"' in sent and "dates absolute from its line's day" in sent
        assert "Today is Tue 2026-12-01." in sent and 'at="2026-11-24 Tue 09:00"' in sent  # the line's own day
        server.reply("Staying in Fukuoka for two weeks from 2026-11-24")  # a model that ignores the format
        assert chat.write_memory(exchange, None) == MemoryDraft("Staying in Fukuoka for two weeks from 2026-11-24")


def test_the_one_decision_dates_lines_and_shows_a_memorys_end_in_the_configured_zone_and_nothing_without_one():
    from loopback.openai_server import OpenAIServer
    from memorybot.core.prompting import prompts
    from memorybot.core.record.domain import JST, Exchange

    said = message("u1", "I moved out of Kyoto last week", name="alice", at=datetime(2026, 11, 29, 21, 5, tzinfo=JST))
    exchange = Exchange.of(Speaker("u1", "alice"), said.scope, [said])
    with OpenAIServer() as server:
        jev, _ = _dated_models(server, ZoneInfo("Europe/Paris"))
        server.reply('{"verdicts": {"tea22": "keep", "kyo22": "delete", "fuk22": "keep"}, "add": 0.1}')
        decision = jev.decide(exchange, [LEARNED, CHANGED, PLAN])
        sent = _user(server)
    assert decision.add == 0.1 and set(decision.verdicts) == {"tea22", "kyo22", "fuk22"}
    assert "Today is Mon 2026-11-30." in sent and 'at="2026-11-29 Sun 13:05"' in sent
    assert '<memory id="tea22">' in sent and '<memory id="fuk22" until="2026-12-24">' in sent  # the end, no "on"
    undated = prompts.decide_question(exchange, [LEARNED, PLAN]).user  # built outside the factory
    assert "Today is" not in undated and "at=" not in undated and "until=" not in undated
