"""Dates in the prompts, in the deployment's time zone: the reply's system message says today's
date and each memory's (learned, or last changed, and a plan's end), in two time zones."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from fakes import memory, message
from memorybot.core.domain import Speaker
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
    assert "Today is Tuesday 2026-12-01 (JST)." in system(ZoneInfo("Asia/Tokyo"))
    assert "Today is Monday 2026-11-30 (CET)." in system(ZoneInfo("Europe/Paris"))


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
