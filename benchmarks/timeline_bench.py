"""Time-aware memories on the generated timelines (benchmarks/data/timelines_{en,ja}.jsonl, seed in
generate_timelines.py), each person's plans and changes among their 100-500 durable facts from the
recall profiles.

1. Ended memories reaching the reply (goal 0): every person's plans are stored with their end
   (``valid_until``) beside their profile; each plan's question is asked at the data's ``now``
   through the real reply read (core.reply.ReplyWriter: selection and prompt), and every ended plan
   found in the prompt's system message is counted. "Ignoring the end" is the same read with every
   memory usable: what reached the reply before memories had an end.
2. Stale facts after an update and its re-mentions (goal <= 5 %): each change line ("I moved out of
   Osaka ...") and then its re-mentions go through the real write path (core.extraction.Extractor,
   in-memory store seeded with the profile, the old fact months old) with the judge that knows a
   fact it is shown (benchmarks.recall_bench.KnowsItJev: it updates the superseded fact when it is
   among the ten read, else adds). Stale: the old fact left as it was beside the new one.
   newest-ten is the design's read, selection the relevance selection (core.selection).
3. Tokens the dates add to a turn (goal <= 5 %): one live turn's prompts (worth, the one decision,
   two writing tasks and the reply with a channel tail of 20 lines, ten memories read) built
   with their dates and without, counted with an
   approximate tokenizer (a word, a group of up to three digits, or any other visible character
   is one token: close to what BPE tokenizers do with dates, which they cut into digit groups).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from benchmarks.generate_profiles import LANGS
from benchmarks.generate_timelines import data_path
from benchmarks.recall_bench import KnowsItJev, NewestTenStore, RestatingChat, load
from memorybot.core.domain import GLOBAL_SCOPE, JST, Memory, Owner, parse_iso
from memorybot.core.extraction import Extractor
from memorybot.core.reply import ReplyWriter
from tests.fakes import FakeMemoryStore, ScriptedChat, message, speaker

OLD_ID = "old22"  # the superseded fact's id in each change's store


@dataclass(frozen=True)
class Timeline:
    person: str
    now: datetime
    background: list[Memory]
    plans: list[dict[str, Any]]
    changes: list[dict[str, Any]]


def timelines(code: str) -> list[Timeline]:
    profiles = {p.person_id: p.memories for p in load(code)}
    out = []
    for line in data_path(code).read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        out.append(
            Timeline(data["person"], parse_iso(data["now"]), profiles[data["person"]], data["plans"], data["changes"])
        )
    return out


def plan_memories(t: Timeline) -> list[Memory]:
    return [
        Memory(
            t.person,
            f"pl{i:03d}",
            p["text"],
            parse_iso(p["said_at"]),
            parse_iso(p["said_at"]),
            scope=GLOBAL_SCOPE,
            valid_until=date.fromisoformat(p["valid_until"]),
        )
        for i, p in enumerate(t.plans)
    ]


@dataclass
class Reached:
    questions: int = 0
    ended_reached: int = 0  # ended plans in the reply's prompt, memories ending honoured
    ended_reached_ignoring: int = 0  # ... every memory usable (no ends)
    live_reached: int = 0  # the asked-about plan, not ended, in the prompt


def ended_reaching_reply(people: Sequence[Timeline]) -> Reached:
    out = Reached()
    for t in people:
        plans = plan_memories(t)
        store = FakeMemoryStore(clock=lambda t=t: t.now)
        store.seed(*t.background, *plans)
        owner = Owner(GLOBAL_SCOPE, t.person)
        honouring = ReplyWriter(store, ScriptedChat(), zone=JST, clock=lambda t=t: t.now)
        long_ago = datetime(2000, 1, 1, tzinfo=JST)  # a today past no end: the ends ignored
        ignoring = ReplyWriter(store, ScriptedChat(), zone=JST, clock=lambda: long_ago)
        today = t.now.astimezone(JST).date()
        ended = [m for m in plans if m.ended(today)]
        for plan, memory in zip(t.plans, plans, strict=True):
            said = [message(t.person, plan["question"], at=t.now)]
            system = honouring.prompt_for(owner, "someone", said)[0].content
            out.questions += 1
            out.ended_reached += sum(m.text in system for m in ended)
            out.live_reached += not memory.ended(today) and memory.text in system
            ignored = ignoring.prompt_for(owner, "someone", said)[0].content
            out.ended_reached_ignoring += sum(m.text in ignored for m in ended)
    return out


@dataclass
class Stale:
    changes: int = 0
    old_read: int = 0  # the superseded fact was among the ten the change line was judged with
    stale: int = 0  # the old fact left as it was beside the new one
    duplicates: int = 0  # re-mentions that added yet another memory of the new state


def stale_facts(people: Sequence[Timeline], *, newest: bool) -> Stale:
    out = Stale()
    for t in people:
        for change in t.changes:
            old = Memory(
                t.person,
                OLD_ID,
                change["old_text"],
                parse_iso(change["old_at"]),
                parse_iso(change["old_at"]),
                scope=GLOBAL_SCOPE,
            )
            at = parse_iso(change["said_at"])
            store = (NewestTenStore if newest else FakeMemoryStore)(clock=lambda at=at: at)
            store.seed(*t.background, old)
            extractor = Extractor(store, KnowsItJev(OLD_ID), RestatingChat(), clock=lambda at=at: at)
            result = extractor.run(speaker(t.person), GLOBAL_SCOPE, [message(t.person, change["said"], at=at)])
            out.changes += 1
            out.old_read += OLD_ID in result.updated
            current = OLD_ID if OLD_ID in result.updated else (result.added or [OLD_ID])[0]
            for re_mention in change["re_mentions"]:
                when = parse_iso(re_mention["said_at"])
                store.clock = lambda when=when: when
                again = Extractor(store, KnowsItJev(current), RestatingChat(), clock=lambda when=when: when).run(
                    speaker(t.person), GLOBAL_SCOPE, [message(t.person, re_mention["said"], at=when)]
                )
                out.duplicates += bool(again.added)
            left = store.get(Owner(GLOBAL_SCOPE, t.person), OLD_ID)
            out.stale += left is not None and dataclasses.replace(left, embedding=None) == old
    return out


_TOKEN = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]|_", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def approx_tokens(text: str) -> int:
    """Words and digit groups of up to three, one token each; punctuation one each; CJK text one
    token a character (a CJK run is one match of the word pattern: count its characters)."""
    count = 0
    for token in _TOKEN.findall(text):
        count += len(_CJK.findall(token)) or 1
    return count


def turn_prompts(t: Timeline, *, dated: bool) -> list[str]:
    """The texts one live turn sends to models (worth, the one decision over the ten memories read,
    one rewrite and the new memory's text, and the reply with its channel tail of 20 lines): with
    today and each line's own time, or without (the memories' own days are in both)."""
    from memorybot.core import prompts
    from memorybot.core.dates import PromptTime
    from memorybot.core.domain import Exchange, Speaker

    now = t.now
    memories = sorted(t.background, key=lambda m: m.updated_at, reverse=True)[:10]
    said = [c["said"] for c in t.changes] + [p["said"] for p in t.plans]
    lines = [message(t.person, text, at=now) for text in said[:10]]
    exchange = Exchange.of(Speaker(t.person, "someone"), GLOBAL_SCOPE, lines[-6:])
    assert exchange is not None
    when = PromptTime(now, JST) if dated else None
    questions = [prompts.worth_question(exchange, when), prompts.decide_question(exchange, memories, when)]
    tasks = [prompts.memory_task(exchange, memories[0], when), prompts.memory_task(exchange, None, when)]
    reply = prompts.build_reply_prompt(
        Speaker(t.person, "someone"), memories, lines * 2, **({"now": now, "zone": JST} if dated else {})
    )
    texts = [text for q in questions for text in (q.system, q.user)] + [x for k in tasks for x in (k.system, k.user)]
    return texts + [m.content for m in reply]


def date_tokens(people: Sequence[Timeline]) -> tuple[int, int]:
    """(tokens of the turns without dates, tokens the dates add), over every person's turn."""
    plain = dated = 0
    for t in people:
        plain += sum(approx_tokens(text) for text in turn_prompts(t, dated=False))
        dated += sum(approx_tokens(text) for text in turn_prompts(t, dated=True))
    return plain, dated - plain


def pct(n: int, total: int) -> str:
    return f"{100 * n / total:5.1f} %" if total else "  n/a"


def main() -> None:
    print("Generated timelines (benchmarks/data/timelines_*.jsonl): plans that end and facts that change,")
    print("among each recall profile's 100-500 durable facts; the reply's today is the data's now, in JST.")
    print("\nended memories reaching the reply (goal 0): ended plans in the reply prompt over every plan question")
    print(f"{'lang':<5}{'questions':>10}{'ended reached':>14}{'ignoring ends':>14}{'asked-about live plan read':>28}")
    datasets = {code: timelines(code) for code in LANGS}
    for code, people in datasets.items():
        r = ended_reaching_reply(people)
        live = sum(not m.ended(t.now.astimezone(JST).date()) for t in people for m in plan_memories(t))
        print(
            f"{code:<5}{r.questions:>10}{r.ended_reached:>14}{r.ended_reached_ignoring:>14}"
            f"{f'{r.live_reached} of {live}':>28}"
        )
    print("\nstale facts after a change and its re-mentions (goal <= 5 %), judge: sees it, knows it")
    print(f"{'lang':<5}{'read':<11}{'changes':>8}{'old read':>9}{'stale':>7}{'stale rate':>11}{'re-mention dups':>16}")
    for code, people in datasets.items():
        for label, newest in (("newest-ten", True), ("selection", False)):
            s = stale_facts(people, newest=newest)
            print(
                f"{code:<5}{label:<11}{s.changes:>8}{s.old_read:>9}{s.stale:>7}{pct(s.stale, s.changes):>11}"
                f"{s.duplicates:>16}"
            )
    print(
        "(old read: the superseded fact was among the ten the change was judged with, so it was updated;\n"
        " stale: it was left as it was beside the new memory; re-mention dups: later mentions of the new\n"
        " state that added yet another memory.)"
    )
    print("\ntokens the dates add to a turn (goal <= 5 %), approximate tokenizer (see the module docstring)")
    print(f"{'lang':<5}{'turns':>6}{'tokens without':>15}{'added by dates':>15}{'share':>8}")
    for code, people in datasets.items():
        plain, added = date_tokens(people)
        print(f"{code:<5}{len(people):>6}{plain:>15}{added:>15}{pct(added, plain):>8}")


if __name__ == "__main__":
    main()
