"""Generates the time-aware benchmark's data (benchmarks/data/timelines_{en,ja}.jsonl): plans that
end and facts that change, for the people of the recall benchmark's profiles.

`python -m benchmarks.generate_timelines` rewrites both files; with the fixed seed the output is
byte-for-byte the same on every run (a unit test checks the committed files against it).

Each line is one person of benchmarks/data/profiles_{lang}.jsonl (same ``person`` id: their
100-500 durable facts are the background the selection reads among) and adds:

- ``plans``: time-limited situations, each as the person said it (``said``, at ``said_at``, with
  a relative date) and as a memory that resolved it (``text``, with its ``valid_until``): about
  half have ended by ``now``. A ``question`` asks about each now, in the plan's own words, so that
  a reader that ignores the end would pick it.
- ``changes``: a durable fact (``old_text``, written months before) and the line that changes it
  (``said`` at ``said_at``: "I moved from Osaka to Kyoto last week"), the memory a writer should
  leave (``new_text``, the relative date resolved against the line's own date), and later
  ``re_mentions`` of the new state. The change line names what it replaces (people do: "moved
  from", "left", "no longer"), in other words than the old fact's, as the recall data paraphrases.

Dates are days in JST (the default deployment time zone): a relative date is resolved against the
day the line was said there. English and Japanese are written each in its own words, not translated.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.generate_profiles import LANGS, NOW
from memorybot.core.record.domain import JST

SEED = 20261202
DATA_DIR = Path(__file__).parent / "data"
PLANS = 8  # per person
CHANGES = 6  # per person
RE_MENTIONS = 2  # per change


def data_path(code: str) -> Path:
    return DATA_DIR / f"timelines_{code}.jsonl"


def profiles_path(code: str) -> Path:
    return DATA_DIR / f"profiles_{code}.jsonl"


# ---------------------------------------------------------------- vocabularies

EN_CITIES = ["Fukuoka", "Sapporo", "Lisbon", "Hanoi", "Vancouver", "Nairobi", "Oslo", "Busan", "Porto", "Cusco"]
JA_CITIES = ["福岡", "札幌", "金沢", "那覇", "仙台", "松山", "函館", "長崎", "高松", "盛岡"]
EN_THINGS = [
    ("exam", "the statistics exam"),
    ("recital", "the piano recital"),
    ("interview", "the job interview"),
    ("marathon", "the city marathon"),
    ("surgery", "knee surgery"),
    ("deadline", "the thesis deadline"),
]
JA_THINGS = [
    ("試験", "統計の試験"),
    ("発表会", "ピアノの発表会"),
    ("面接", "転職の面接"),
    ("大会", "市民マラソン"),
    ("手術", "膝の手術"),
    ("締切", "卒論の締切"),
]

# (old fact, change line, new memory, re-mentions): {a} the old value, {b} the new one, {when} the resolved date.
EN_CHANGES = [
    (
        "Lives in {a}",
        "I moved out of {a} and into a flat in {b} {rel}",
        "Moved from {a} to {b} around {when}",
        ["{b} is lovely this time of year", "Still getting used to life in {b}"],
        ["Osaka", "Nagoya", "Kobe", "Leeds", "Lyon", "Austin"],
        ["Kyoto", "Sendai", "Nara", "York", "Nice", "Denver"],
    ),
    (
        "Works at {a}",
        "I quit {a}, starting at {b} {rel}",
        "Left {a}; works at {b} since around {when}",
        ["My new team at {b} is great", "{b} has a much shorter commute"],
        ["Sony", "Acme", "Initech", "Hooli", "Umbrella", "Globex"],
        ["Toyota", "Nintendo", "Panasonic", "Rakuten", "Hitachi", "Canon"],
    ),
    (
        "Drives a {a}",
        "Sold my {a} {rel}, got a {b} instead",
        "Sold the {a}; drives a {b} since around {when}",
        ["The {b} handles snow well", "Took the {b} to the coast"],
        ["Corolla", "Civic", "Golf", "Fiesta", "Mini", "Prius"],
        ["Outback", "Leaf", "Model 3", "Jimny", "Swift", "CX-5"],
    ),
    (
        "Is learning {a}",
        "I gave up on {a} {rel} and switched to {b}",
        "Stopped learning {a}; learning {b} since around {when}",
        ["{b} grammar is tough", "Practised {b} for an hour"],
        ["Spanish", "German", "Korean", "French", "Italian", "Russian"],
        ["Portuguese", "Dutch", "Thai", "Turkish", "Polish", "Greek"],
    ),
    (
        "Is vegetarian",
        "I stopped being vegetarian {rel}, I eat {b} again",
        "No longer vegetarian since around {when}; eats {b} again",
        ["Had {b} for dinner", "Cooking {b} tonight"],
        [""],
        ["fish", "chicken", "meat", "seafood", "pork", "beef"],
    ),
    (
        "Has a cat named {a}",
        "My cat {a} died {rel}; I adopted a puppy, {b}",
        "Cat {a} died around {when}; has a puppy named {b}",
        ["{b} chewed my shoes", "Walking {b} in the park"],
        ["Miso", "Tofu", "Luna", "Simba", "Nori", "Kiki"],
        ["Rex", "Biscuit", "Pepper", "Mochi", "Buddy", "Hachi"],
    ),
]
JA_CHANGES = [
    (
        "{a}に住んでいる",
        "{rel}{a}から{b}に引っ越した",
        "{when}ごろ{a}から{b}に引っ越した",
        ["{b}の紅葉がきれい", "{b}の暮らしにまだ慣れない"],
        ["大阪", "名古屋", "神戸", "横浜", "広島", "千葉"],
        ["京都", "仙台", "奈良", "鎌倉", "岡山", "松本"],
    ),
    (
        "{a}で働いている",
        "{a}を辞めて、{rel}から{b}で働いてる",
        "{a}を退職し、{when}ごろから{b}で働いている",
        ["{b}のチームは雰囲気がいい", "{b}は通勤が楽"],
        ["ソニー", "日立", "富士通", "東芝", "シャープ", "京セラ"],
        ["トヨタ", "任天堂", "楽天", "キヤノン", "ホンダ", "カシオ"],
    ),
    (
        "{a}に乗っている",
        "{rel}{a}を売って{b}に乗り換えた",
        "{when}ごろ{a}を手放し、{b}に乗っている",
        ["{b}で海まで走った", "{b}は雪道に強い"],
        ["カローラ", "フィット", "アクア", "ノート", "デミオ", "ヴィッツ"],
        ["ジムニー", "リーフ", "ハスラー", "フリード", "セレナ", "ロードスター"],
    ),
    (
        "{a}を勉強している",
        "{a}の勉強は{rel}やめて、{b}を始めた",
        "{when}ごろ{a}をやめ、{b}を勉強している",
        ["{b}の文法が難しい", "{b}を一時間練習した"],
        ["スペイン語", "ドイツ語", "韓国語", "フランス語", "イタリア語", "中国語"],
        ["ポルトガル語", "タイ語", "トルコ語", "ベトナム語", "ロシア語", "アラビア語"],
    ),
    (
        "菜食主義",
        "{rel}から菜食主義をやめて、また{b}を食べてる",
        "{when}ごろ菜食主義をやめ、また{b}を食べている",
        ["夕飯に{b}を食べた", "今夜は{b}を料理する"],
        [""],
        ["魚", "鶏肉", "肉", "海鮮", "豚肉", "牛肉"],
    ),
    (
        "猫の{a}を飼っている",
        "猫の{a}が{rel}死んじゃって、子犬の{b}を迎えた",
        "猫の{a}は{when}ごろ亡くなり、子犬の{b}を飼っている",
        ["{b}に靴をかじられた", "{b}と公園を散歩した"],
        ["ミソ", "きなこ", "ルナ", "こむぎ", "のり", "キキ"],
        ["ハチ", "ポチ", "マロン", "モカ", "コタロウ", "ソラ"],
    ),
]

EN_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
JA_WEEKDAYS = ["月曜", "火曜", "水曜", "木曜", "金曜", "土曜", "日曜"]


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _day(at: datetime) -> str:
    return at.strftime("%Y-%m-%d")


def _plans(code: str, rng: random.Random) -> list[dict[str, Any]]:
    plans = []
    cities = rng.sample(EN_CITIES if code == "en" else JA_CITIES, PLANS // 2)
    things = rng.sample(EN_THINGS if code == "en" else JA_THINGS, PLANS - PLANS // 2)
    for i in range(PLANS):
        ended = i % 2 == 0  # half have ended by now
        if i < PLANS // 2:
            city, weeks = cities[i], rng.randint(2, 6)
            # said so that the stay ended 3-40 days ago, or ends 3-40 days from now
            end = NOW + timedelta(days=rng.randint(3, 40) * (-1 if ended else 1))
            said_at = end - timedelta(weeks=weeks, hours=rng.randint(0, 20))
            until = said_at.astimezone(JST).date() + timedelta(weeks=weeks)
            if code == "en":
                said, text = f"I'm in {city} for the next {weeks} weeks", f"Staying in {city} until around {until}"
                question = f"Any food tips for {city}?"
            else:
                said, text = f"これから{weeks}週間、{city}にいる", f"{until}ごろまで{city}に滞在中"
                question = f"{city}でおすすめの店ある？"
        else:
            short, long = things[i - PLANS // 2]
            # said 1-6 days before the day, which is 3-40 days ago or ahead; named by its weekday
            until = NOW.date() + timedelta(days=rng.randint(3, 40) * (-1 if ended else 1))
            said_day = until - timedelta(days=rng.randint(1, 6))
            weekday = until.weekday()
            said_at = datetime(said_day.year, said_day.month, said_day.day, rng.randint(0, 14), tzinfo=JST)
            if code == "en":
                said = f"{long[0].upper()}{long[1:]} is on {EN_WEEKDAYS[weekday]}, wish me luck"
                text, question = f"Has {long} on {until}", f"Any tips for the {short}?"
            else:
                said = f"{long}は{JA_WEEKDAYS[weekday]}日、がんばる"
                text, question = f"{until}に{long}がある", f"{short}のコツある？"
        plans.append(
            {
                "id": f"p{i + 1:02d}",
                "said": said,
                "said_at": _iso(said_at),
                "text": text,
                "valid_until": str(until),
                "ended": str(until) < _day(NOW),
                "question": question,
            }
        )
    return plans


def _changes(code: str, rng: random.Random) -> list[dict[str, Any]]:
    templates = EN_CHANGES if code == "en" else JA_CHANGES
    out = []
    for i, (old, line, new, re_mentions, olds, news) in enumerate(rng.sample(templates, CHANGES)):
        a, b = rng.choice(olds), rng.choice(news)
        days_ago = rng.randint(2, 60)
        said_at = NOW - timedelta(days=days_ago, hours=rng.randint(0, 20))
        back = rng.choice((7, 14, 0))
        if code == "en":
            rel = {7: "last week", 14: "two weeks ago", 0: "today"}[back]
        else:
            rel = {7: "先週", 14: "二週間前", 0: "今日"}[back]
        when = str(said_at.astimezone(JST).date() - timedelta(days=back))  # the line's own day, in JST
        old_at = said_at - timedelta(days=rng.randint(90, 240))
        out.append(
            {
                "id": f"c{i + 1:02d}",
                "old_text": old.format(a=a),
                "old_at": _iso(old_at),
                "said": line.format(a=a, b=b, rel=rel),
                "said_at": _iso(said_at),
                "resolved": when,
                "new_text": new.format(a=a, b=b, when=when),
                "re_mentions": [
                    {"said": r.format(b=b), "said_at": _iso(said_at + timedelta(days=k + 1, hours=3))}
                    for k, r in enumerate(re_mentions[:RE_MENTIONS])
                ],
            }
        )
    return out


def generate(code: str, seed: int = SEED) -> str:
    rng = random.Random(f"{seed}:{code}")
    lines = []
    for row in profiles_path(code).read_text(encoding="utf-8").splitlines():
        person = json.loads(row)["person"]
        lines.append(
            json.dumps(
                {"person": person, "now": _iso(NOW), "plans": _plans(code, rng), "changes": _changes(code, rng)},
                ensure_ascii=False,
                sort_keys=True,
            )
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for code in LANGS:
        text = generate(code)
        data_path(code).write_text(text, encoding="utf-8")
        people = [json.loads(line) for line in text.splitlines()]
        plans = sum(len(p["plans"]) for p in people)
        ended = sum(p["ended"] for person in people for p in person["plans"])
        changes = sum(len(p["changes"]) for p in people)
        print(f"{data_path(code).name}: {len(people)} people, {plans} plans ({ended} ended), {changes} changes")


if __name__ == "__main__":
    main()
