"""Generates the labelled turns `memorybot eval` runs through the configured models
(benchmarks/data/eval_{en,ja}.jsonl), from the people of the recall and timeline data.

`python -m benchmarks.generate_eval` rewrites both files; with the fixed seed the output is
byte-for-byte the same on every run (a unit test checks the committed files against it).

Each line is one turn of one person (the people of benchmarks/data/profiles_{lang}.jsonl): the
line they said and when (``said``, ``said_at``), the memories the decision is shown (a few of
their own facts, each under a memory id), and what a model should answer, the labels:

- ``worth``: whether the line states something durable worth keeping (``true``: a plan, a
  change of a fact; ``false``: a question to the bot, small talk; ``null``: a request to forget,
  which is not judged on worth);
- ``verdicts``: for each memory shown, ``keep``, ``update`` (the change's old fact) or ``delete``
  (the fact a forget request names);
- ``write``: the memory the writer is asked for, or ``null``: a new one (``current`` null) or the
  rewrite of ``current``, and the end it should carry (``valid_until``: the plan's last day, as
  the timeline data resolved it; ``null`` for a durable fact).

Six turns a person, in this order, so that the file's first N lines are a balanced sample: a plan
that has ended by ``now``, a change, a question, a plan still ahead, a forget request, small talk.
Plans and changes are the timeline data's own (benchmarks/data/timelines_{lang}.jsonl), the
questions the recall data's; forget requests and small talk are written here, in each language's
own words.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.generate_profiles import LANGS, NOW
from memorybot.core.record.domain import MEMORY_ID_ALPHABET, MEMORY_ID_LENGTH

SEED = 20261203
DATA_DIR = Path(__file__).parent / "data"
BACKGROUND = 2  # memories shown beside the one a turn is about (a plan or small talk: one more)
# Background facts: about other people or durable tastes, never what the turn is about.
BACKGROUND_KINDS = frozenset({"works", "birthday", "person_hobby", "lives", "food_like", "music", "allergy"})
# A forget request names a person or a pet: every fact about them is theirs to forget.
FORGET_KINDS = frozenset({"lives", "works", "person_hobby", "pet", "pet_age", "birthday"})

EN_SMALL_TALK = [
    "Good morning! How's everyone doing?",
    "Thanks, that really helps",
    "Haha, that's hilarious",
    "Did you see the game last night?",
    "Good night all",
    "Any good movie recommendations?",
    "What's the weather like over there?",
    "Oh really? I didn't know that",
    "Hello again!",
    "Sorry, I was away for a bit",
    "That sounds great",
    "lol same",
]
JA_SMALL_TALK = [
    "おはよう、今日も寒いね",
    "ありがとう、助かった！",
    "それ本当？笑",
    "今日のニュース見た？",
    "おやすみー",
    "何かおすすめの映画ある？",
    "いい天気だね",
    "へえ、知らなかった",
    "こんにちは、元気？",
    "ごめん、ちょっと席外してた",
    "それいいね",
    "わかるー",
]


def data_path(code: str) -> Path:
    return DATA_DIR / f"eval_{code}.jsonl"


def _read(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA_DIR / name).read_text(encoding="utf-8").splitlines()]


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def memory_id(case_id: str, key: str) -> str:
    """A memory id of the bot's own form, the same for the same case and fact on every run."""
    digest = hashlib.sha256(f"{case_id}:{key}".encode()).digest()
    return "".join(MEMORY_ID_ALPHABET[b % len(MEMORY_ID_ALPHABET)] for b in digest[:MEMORY_ID_LENGTH])


def _memory(case_id: str, key: str, text: str, created_at: str, updated_at: str) -> dict[str, Any]:
    return {"id": memory_id(case_id, key), "text": text, "created_at": created_at, "updated_at": updated_at}


def _fact_memory(case_id: str, fact: dict[str, Any]) -> dict[str, Any]:
    return _memory(case_id, fact["id"], fact["text"], fact["created_at"], fact["updated_at"])


def _background(
    case_id: str, facts: list[dict[str, Any]], rng: random.Random, count: int, avoid: str = ""
) -> list[dict[str, Any]]:
    pool = [f for f in facts if f["kind"] in BACKGROUND_KINDS and (not avoid or f["about"] != avoid)]
    return [_fact_memory(case_id, f) for f in sorted(rng.sample(pool, count), key=lambda f: f["id"])]


def _case(
    person: str,
    code: str,
    kind: str,
    said: str,
    said_at: str,
    memories: list[dict[str, Any]],
    *,
    worth: bool | None,
    verdicts: dict[str, str] | None = None,
    write: dict[str, Any] | None = None,
    case_id: str,
) -> dict[str, Any]:
    return {
        "id": case_id,
        "person": person,
        "lang": code,
        "kind": kind,
        "now": _iso(NOW),
        "said": said,
        "said_at": said_at,
        "memories": memories,
        "worth": worth,
        "verdicts": {m["id"]: (verdicts or {}).get(m["id"], "keep") for m in memories},
        "write": write,
    }


def _person_cases(
    code: str,
    profile: dict[str, Any],
    timeline: dict[str, Any],
    small_talk: str,
    rng: random.Random,
    used: set[str],
) -> list[dict[str, Any]]:
    """``used``: the lines already taken in this language; each turn's line is its own, so a
    model's answer can be told by its line."""
    person, facts = profile["person"], profile["facts"]
    by_id = {f["id"]: f for f in facts}
    cases = []

    def plan_case(plan: dict[str, Any], tag: str) -> dict[str, Any]:
        case_id = f"{person}-{tag}"
        memories = _background(case_id, facts, rng, BACKGROUND + 1)
        write = {"current": None, "valid_until": plan["valid_until"]}
        return _case(
            person, code, "plan", plan["said"], plan["said_at"], memories, worth=True, write=write, case_id=case_id
        )

    def fresh(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
        row = next(r for r in rows if r[key] not in used)
        used.add(row[key])
        return row

    ended = fresh([p for p in timeline["plans"] if p["ended"]], "said")
    ahead = fresh([p for p in reversed(timeline["plans"]) if not p["ended"]], "said")
    cases.append(plan_case(ended, "plan-ended"))

    change = fresh(timeline["changes"], "said")
    case_id = f"{person}-change"
    old = _memory(case_id, change["id"], change["old_text"], change["old_at"], change["old_at"])
    memories = sorted([old, *_background(case_id, facts, rng, BACKGROUND)], key=lambda m: m["updated_at"])
    cases.append(
        _case(
            person,
            code,
            "change",
            change["said"],
            change["said_at"],
            memories,
            worth=True,
            verdicts={old["id"]: "update"},
            write={"current": old["id"], "valid_until": None},
            case_id=case_id,
        )
    )

    question = fresh(profile["questions"], "text")
    case_id = f"{person}-question"
    evidence = [_fact_memory(case_id, by_id[f]) for f in question["evidence"][:2]]
    about = {by_id[f]["about"] for f in question["evidence"]} - {""}
    background = [
        m
        for m in _background(case_id, facts, rng, BACKGROUND + 2)
        if m["id"] not in {e["id"] for e in evidence} and all(a not in m["text"] for a in about)
    ][:BACKGROUND]
    asked_at = _iso(NOW - timedelta(hours=rng.randint(1, 48)))
    cases.append(
        _case(person, code, "question", question["text"], asked_at, evidence + background, worth=False, case_id=case_id)
    )

    cases.append(plan_case(ahead, "plan-ahead"))

    target = rng.choice([f for f in facts if f["kind"] in FORGET_KINDS and f["about"]])
    case_id = f"{person}-forget"
    forgotten = _fact_memory(case_id, target)
    memories = sorted(
        [forgotten, *_background(case_id, facts, rng, BACKGROUND, avoid=target["about"])], key=lambda m: m["id"]
    )
    said = (
        f"Please forget what I told you about {target['about']}."
        if code == "en"
        else f"{target['about']}のことは忘れてください。"
    )
    asked_at = _iso(NOW - timedelta(hours=rng.randint(1, 48)))
    cases.append(
        _case(
            person,
            code,
            "forget",
            said,
            asked_at,
            memories,
            worth=None,
            verdicts={forgotten["id"]: "delete"},
            case_id=case_id,
        )
    )

    case_id = f"{person}-small-talk"
    asked_at = _iso(NOW - timedelta(hours=rng.randint(1, 48)))
    memories = _background(case_id, facts, rng, BACKGROUND + 1)
    cases.append(_case(person, code, "small_talk", small_talk, asked_at, memories, worth=False, case_id=case_id))
    return cases


def generate(code: str, seed: int = SEED) -> str:
    rng = random.Random(f"{seed}:{code}")
    profiles = _read(f"profiles_{code}.jsonl")
    timelines = {t["person"]: t for t in _read(f"timelines_{code}.jsonl")}
    talk = EN_SMALL_TALK if code == "en" else JA_SMALL_TALK
    small_talk = rng.sample(talk, len(profiles))  # one line each
    used: set[str] = set()
    cases = [
        case
        for profile, line in zip(profiles, small_talk, strict=True)
        for case in _person_cases(code, profile, timelines[profile["person"]], line, rng, used)
    ]
    return "".join(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n" for case in cases)


def main() -> None:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for code in LANGS:
        text = generate(code)
        data_path(code).write_text(text, encoding="utf-8")
        cases = [json.loads(line) for line in text.splitlines()]
        kinds = sorted({c["kind"] for c in cases})
        print(f"{data_path(code).name}: {len(cases)} turns ({', '.join(kinds)})")


if __name__ == "__main__":
    main()
