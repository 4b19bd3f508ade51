"""Time-aware memories on the generated timelines (benchmarks/data/timelines_{en,ja}.jsonl, seed in
generate_timelines.py), each person's plans and changes among their 100-500 durable facts from the
recall profiles.

1. Ended memories reaching the reply (goal 0): every person's plans are stored with their end
   (``valid_until``) beside their profile; each plan's question is asked at the data's ``now``
   through the real reply read (core.turn.reply.ReplyWriter: selection and prompt), and every ended plan
   found in the prompt's system message is counted. "Ignoring the end" is the same read with every
   memory usable: what reached the reply before memories had an end.
2. Stale facts after an update and its re-mentions (goal <= 5 %): each change line ("I moved out of
   Osaka ...") and then its re-mentions go through the real write path (core.turn.extraction.Extractor,
   in-memory store seeded with the profile, the old fact months old) with the judge that knows a
   fact it is shown (benchmarks.recall_bench.KnowsItJev: it updates the superseded fact when it is
   among the ten read, else adds). Stale: the old fact left as it was beside the new one.
   newest-ten is the design's read, selection the relevance selection (core.prompting.selection).
3. Tokens the dates add to a turn (goal <= 5 %): one live turn (ten lines of the person, each
   answered by the bot, three minutes apart, the last at the data's now) through the real
   OpenAI-compatible adapters against a loopback server: worth, the one decision over the ten
   newest memories, the new memory's text and one rewrite, and the reply over the 20 lines; sent
   with the factory's dating (JST) and without any, every request's messages counted in cl100k
   (quicktok's cl100k_base, as benchmarks/extraction_bench.py counts: plus 4 a message). Also, for
   information, the same lines read by the next 03:00 nightly run (no reply), where each
   exchange's first line says its day and time.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from benchmarks.extraction_bench import cl100k, request_tokens
from benchmarks.generate_profiles import LANGS
from benchmarks.generate_timelines import data_path
from benchmarks.recall_bench import KnowsItJev, NewestTenStore, RestatingChat, load
from memorybot.core.record.domain import GLOBAL_SCOPE, JST, Actor, Memory, Message, Owner, parse_iso
from memorybot.core.turn.extraction import Extractor
from memorybot.core.turn.reply import ReplyWriter
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


BOT_ID = "999"
BOT_SAYS = {"en": "Nice, tell me more.", "ja": "いいですね、もっと聞かせて。"}
PROMPTS = ("worth", "decide", "write new", "rewrite", "reply")  # one live turn's requests, in order


def live_turn(t: Timeline, code: str) -> list[Message]:
    """The turn's conversation: the person's lines (their changes and plans, ten) each answered
    by the bot, three minutes apart, the last at the data's now; the reply sees all 20 lines, the
    extraction its exchange (the newest six)."""
    said = ([c["said"] for c in t.changes] + [p["said"] for p in t.plans])[:10]
    lines = []
    for i, text in enumerate(said):
        at = t.now - timedelta(minutes=3 * (len(said) - 1 - i))
        lines.append(message(t.person, text, at=at - timedelta(seconds=30)))
        lines.append(message(BOT_ID, BOT_SAYS[code], bot=True, to=t.person, at=at))
    return lines[:-1]  # the turn ends on the person's line


def _prompt_of(body: dict[str, Any]) -> str:
    asked = " ".join(str(m.get("content", "")) for m in body["messages"])
    if '{"verdicts"' in asked:
        return "decide"
    if '{"probability"' in asked:
        return "worth"
    if "Write the new memory" in asked:
        return "write new"
    return "rewrite" if "Rewrite this memory" in asked else "reply"


def _answer(body: dict[str, Any]) -> str:
    """The loopback model's answers for the turn: worth, then the first memory updated and an add."""
    kind = _prompt_of(body)
    if kind == "worth":
        return '{"probability": 0.9}'
    if kind == "decide":
        ids = re.findall(r'<memory id="([^"]+)"', body["messages"][-1]["content"])
        return json.dumps({"verdicts": {i: "update" if n == 0 else "keep" for n, i in enumerate(ids)}, "add": 0.9})
    if kind == "reply":
        return "Good to hear from you."
    return '{"text": "Staying in Fukuoka until around 2026-12-08", "validUntil": "2026-12-08"}'


def nightly_run_time(t: Timeline) -> datetime:
    """03:00 JST the day after the data's now: when the nightly run reads that evening's lines."""
    day = t.now.astimezone(JST).date() + timedelta(days=1)
    return datetime.combine(day, time(3), JST)


def turn_requests(
    t: Timeline, code: str, server: Any, *, dated: bool, nightly: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The chat requests of one live turn, by prompt, through the real OpenAI-compatible adapters
    (the factory's dating in JST, or none): the extraction (worth, the one decision over the ten
    newest memories, the new memory and one rewrite) and the reply over the 20 lines. ``nightly``:
    the same lines read by the next 03:00 run (actor nightly, no reply)."""
    from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAICompatibleClient, OpenAIDecisionModel
    from memorybot.core.prompting.prompts import build_reply_prompt
    from memorybot.core.record.domain import Speaker
    from tests.retrying import quick_retrier

    server.clear()
    server.responder = _answer
    client = OpenAICompatibleClient(server.url, "m", timeout_seconds=5.0, api_key="k", retrier=quick_retrier())
    jev, chat = OpenAIDecisionModel(client), OpenAIChatModel(client)
    now = nightly_run_time(t) if nightly else t.now
    if dated:
        for model in (jev, chat):
            model.zone, model.clock = JST, lambda: now
    memories = sorted(t.background, key=lambda m: m.updated_at, reverse=True)[:10]
    store = FakeMemoryStore(clock=lambda: now)
    store.seed(*memories)
    lines = live_turn(t, code)
    actor = Actor.NIGHTLY if nightly else Actor.EXTRACTION
    Extractor(store, jev, chat, clock=lambda: now, zone=JST).run(speaker(t.person), GLOBAL_SCOPE, lines, actor=actor)
    if not nightly:
        chat.write_reply(
            build_reply_prompt(
                Speaker(t.person, "someone"), memories, lines, **({"now": now, "zone": JST} if dated else {})
            )
        )
    by_prompt: dict[str, list[dict[str, Any]]] = {name: [] for name in PROMPTS}
    for request in server.requests_to(server.COMPLETIONS_PATH):
        by_prompt[_prompt_of(request.json)].append(request.json)
    return by_prompt


def date_tokens(people: Sequence[Timeline], code: str, *, nightly: bool = False) -> dict[str, tuple[int, int]]:
    """By prompt: (cl100k tokens of the turns without dates, tokens the dates add), every person's turn."""
    from tests.loopback.openai_server import OpenAIServer

    encoding = cl100k()
    names = PROMPTS[:-1] if nightly else PROMPTS
    out = {name: (0, 0) for name in names}
    with OpenAIServer() as server:
        for t in people:
            plain = turn_requests(t, code, server, dated=False, nightly=nightly)
            dated = turn_requests(t, code, server, dated=True, nightly=nightly)
            for name in names:
                assert len(plain[name]) == len(dated[name]) == 1, (name, t.person)  # the same turn, dated or not
                without, added = out[name]
                cost = request_tokens(encoding, plain[name])
                out[name] = (without + cost, added + request_tokens(encoding, dated[name]) - cost)
    return out


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
    print("\ntokens the dates add to a live turn (goal <= 5 %), cl100k over the requests the adapters send")
    print(f"{'lang':<5}{'turns':>6}{'tokens without':>15}{'added by dates':>15}{'share':>8}   by prompt: added (share)")
    for nightly in (False, True):
        for code, people in datasets.items():
            by_prompt = date_tokens(people, code, nightly=nightly)
            plain, added = (sum(v[i] for v in by_prompt.values()) for i in (0, 1))
            parts = ", ".join(
                f"{name} {a / len(people):.0f} ({pct(a, p).strip()})" for name, (p, a) in by_prompt.items()
            )
            label = f"{code} n" if nightly else code
            print(f"{label:<5}{len(people):>6}{plain:>15}{added:>15}{pct(added, plain):>8}   {parts}")
    print(
        "(by prompt: the tokens the dates add to that request, per turn, and their share of it; 'n': the same\n"
        " lines read by the next 03:00 run, no reply: each exchange's first line then says its day and time)"
    )


if __name__ == "__main__":
    main()
