"""A simulated week of the bot, generated from a seed: people, servers, turns, nights and faults.

People live in two servers (a channel each) and in their DMs with the bot; a third of them speak
Japanese (their interactions carry the ``ja`` locale and their lines are in Japanese), the rest
English. Each day has its turns (a person's /chat at a time of that day), interleaved across the
servers, and ends with the night's consolidation at 03:00 JST. Faults: now and then Jev or the
chat model answers 503 to one request. The person's own actions (pause and resume,
forget-all), the operator's (an import of ten people of 80-170 memories each, two erasures, a
rollback of a night) fall on fixed days of the week so every week has them.

The same seed gives the same week: ``python -m benchmarks.week_generator`` prints a summary.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memorybot.local.people import user_id_for

JST_OFFSET = timedelta(hours=9)
SERVERS = ("1300000000000000001", "1300000000000000002")
CHANNELS = {SERVERS[0]: "1310000000000000001", SERVERS[1]: "1310000000000000002"}
IMPORTED_PEOPLE = 10
IMPORT_ROWS = (80, 170)  # memories per imported person, inclusive
FAULT_RATE = 0.04  # per turn, for each of Jev and the chat model

TOPICS_EN = (
    "I started learning the {x} last month",
    "My sister {n} moved to {c} for work",
    "I'm planning a trip to {c} in the spring",
    "I can't eat {f}, it makes me ill",
    "Our team switched to a four-day week",
    "I've been reading a lot about {x} lately",
    "My dog {n} turned {k} today",
    "I prefer tea over coffee in the mornings",
    "I'm training for a half marathon in {c}",
    "Work has been stressful because of a deadline on Friday",
    "I finally fixed the bike I've been meaning to fix",
    "Do you remember what I said about {x}?",
)
TOPICS_JA = (
    "先月から{x}を習い始めました",
    "姉の{n}が仕事で{c}に引っ越しました",
    "春に{c}へ旅行する予定です",
    "{f}は体に合わないので食べられません",
    "最近{x}についての本をよく読んでいます",
    "犬の{n}が今日で{k}歳になりました",
    "朝はコーヒーより緑茶が好きです",
    "{c}のハーフマラソンに向けて練習中です",
    "金曜日の締め切りで仕事が忙しいです",
    "{x}の話、覚えていますか？",
)
FILL = {
    "x": ("cello", "go", "pottery", "Rust", "calligraphy", "sailing", "shamisen", "chess"),
    "n": ("Yuki", "Sam", "Hana", "Leo", "Mika", "Ren", "Ada", "Kai"),
    "c": ("Osaka", "Lisbon", "Sapporo", "Toronto", "Kyoto", "Berlin", "Fukuoka", "Oslo"),
    "f": ("peanuts", "shellfish", "gluten", "dairy"),
    "k": ("3", "5", "7", "10"),
}
FILL_JA = {
    "x": ("チェロ", "囲碁", "陶芸", "書道", "ヨット", "三味線", "将棋"),
    "n": ("ゆき", "はな", "れん", "みか", "かい"),
    "c": ("大阪", "札幌", "京都", "福岡", "リスボン", "ベルリン"),
    "f": ("ピーナッツ", "甲殻類", "小麦", "乳製品"),
    "k": ("3", "5", "7", "10"),
}


@dataclass(frozen=True)
class Person:
    name: str
    language: str  # "en" | "ja"
    server: str  # the server whose channel they chat in (their DM too, now and then)

    @property
    def locale(self) -> str:
        return "ja" if self.language == "ja" else "en-US"


@dataclass(frozen=True)
class Turn:
    person: Person
    text: str
    at: datetime
    in_dm: bool = False
    jev_fault: bool = False  # Jev answers 503 to one request around this turn
    chat_fault: bool = False  # and the chat model to one


@dataclass(frozen=True)
class Action:
    """Something other than a turn: ``kind`` is pause, resume, forget-all, erase, import, rollback."""

    kind: str
    person: Person | None = None
    rows: tuple[list[dict], ...] = ()  # an import: one request's rows per person


@dataclass
class Day:
    number: int  # 1..days
    turns_by_server: dict[str, list[Turn]]
    before: list[Action] = field(default_factory=list)  # at the start of the day, before any turn
    night: datetime = datetime.min  # the nightly run's 03:00 JST after this day

    @property
    def turns(self) -> int:
        return sum(len(t) for t in self.turns_by_server.values())


@dataclass
class Week:
    seed: int
    people: list[Person]
    days: list[Day]


def generate(seed: int = 7, people: int = 30, days: int = 7, turns_per_day: int = 130, *, end: datetime) -> Week:
    """A week (``days`` days) ending before ``end``: the last night is the latest 03:00 JST before it."""
    rng = random.Random(seed)
    crowd = [
        Person(f"week-{seed}-p{n:02d}", "ja" if n % 3 == 2 else "en", SERVERS[n % len(SERVERS)]) for n in range(people)
    ]
    last_night = _latest_3am_jst(end)
    week = Week(seed, crowd, [])
    active = list(crowd)
    for number in range(1, days + 1):
        night = last_night - timedelta(days=days - number)
        day_start = night - timedelta(hours=23)
        before = _actions(rng, number, days, crowd, active)
        turns: dict[str, list[Turn]] = {s: [] for s in SERVERS}
        times = sorted(day_start + timedelta(seconds=rng.uniform(0, 22 * 3600)) for _ in range(turns_per_day))
        for at in times:
            person = rng.choice(active)
            pattern, fill = (TOPICS_JA, FILL_JA) if person.language == "ja" else (TOPICS_EN, FILL)
            text = rng.choice(pattern).format(**{k: rng.choice(v) for k, v in fill.items()})
            turns[person.server].append(
                Turn(
                    person,
                    text,
                    at.astimezone(UTC),
                    in_dm=rng.random() < 0.15,
                    jev_fault=rng.random() < FAULT_RATE,
                    chat_fault=rng.random() < FAULT_RATE,
                )
            )
        week.days.append(Day(number, turns, before, night))
    return week


def _actions(rng: random.Random, number: int, days: int, crowd: list[Person], active: list[Person]) -> list[Action]:
    """The week's fixed events, scaled to its length: pause (day 2) and resume (day 3), forget-all
    (day 3), the import (the middle day), a rollback of the night before (the day after), an
    erasure on each of the last two days (whoever is erased chats no more)."""
    middle = max(1, (days + 1) // 2)
    actions: list[Action] = []
    if number == min(2, days):
        actions.append(Action("pause", crowd[1]))
    if number == min(3, days):
        actions += [Action("resume", crowd[1]), Action("forget-all", crowd[2])]
    if number == middle:
        actions.append(Action("import", rows=tuple(_import_rows(rng, crowd))))
    if number == min(middle + 1, days) and number > 1:
        actions.append(Action("rollback"))
    if number >= days - 1 and days >= 2 and len(active) > 2:
        gone = active[3 + number % 2 if len(active) > 5 else -1]
        actions.append(Action("erase", gone))
        active.remove(gone)
    return actions


def _import_rows(rng: random.Random, crowd: list[Person]) -> list[list[dict]]:
    """One request per imported person (their memories from an older deployment)."""
    requests = []
    for n in range(IMPORTED_PEOPLE):
        person = crowd[n % len(crowd)]
        user_id = user_id_for(person.name)
        count = rng.randint(*IMPORT_ROWS)
        pattern, fill = (TOPICS_JA, FILL_JA) if person.language == "ja" else (TOPICS_EN, FILL)
        requests.append(
            [
                {
                    "userId": user_id,
                    "scope": f"guild:{person.server}",
                    "text": rng.choice(pattern).format(**{k: rng.choice(v) for k, v in fill.items()}) + f" ({i})",
                    "createdAt": "2026-01-01T00:00:00Z",
                    "updatedAt": "2026-02-01T00:00:00Z",
                    "id": f"old-{n}-{i:04d}",
                }
                for i in range(count)
            ]
        )
    return requests


def _latest_3am_jst(at: datetime) -> datetime:
    local = at.astimezone(UTC) + JST_OFFSET
    three = local.replace(hour=3, minute=0, second=0, microsecond=0)
    if three > local:
        three -= timedelta(days=1)
    return (three - JST_OFFSET).replace(tzinfo=UTC)


if __name__ == "__main__":
    week = generate(end=datetime.now(UTC))
    for day in week.days:
        kinds = ", ".join(a.kind for a in day.before) or "-"
        faults = sum(t.jev_fault + t.chat_fault for ts in day.turns_by_server.values() for t in ts)
        print(f"day {day.number}: {day.turns} turns, {faults} faults, before: {kinds}; night {day.night.isoformat()}")
