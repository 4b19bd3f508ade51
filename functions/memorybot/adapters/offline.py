"""OFFLINE STAND-INS, NOT MODELS: deterministic rules so the local stack runs with no network.

They follow simple keyword rules, good enough to watch memories form, update and be
deleted on a laptop. Everything they write is labelled (``[offline]`` on memory texts,
``(offline stand-in)`` on replies, ``（オフライン代役）`` on the diary) so nobody takes
their output for a model's.

The decision rules look only at what the exchange's speaker said: the newest of their
own lines in ``exchange.messages`` (``is_bot`` false and written by the speaker).
The bot's lines never count, whatever they say, and neither does a display name:
authorship comes from ``is_bot`` and the author id, never from "name: text" text.

- worth: 0.8 when that line says something about the speaker ("I like", "I'm", "my",
  "going to", 好き, 私は, 予定 ...) or asks to forget something; otherwise 0.2.
- verdict: a memory is *about the line* when the line shares a keyword with it and holds all
  of the memory's keywords but at most one (the thing that changed: "I love black tea now" is
  about "Loves green tea"; "My brother Hamid lives in Oslo" is not about "Brother Hamid works
  as a chef", which it shares only the person with). Delete a memory about the line when it
  asks to forget ("forget that...", not "don't forget" or "I always forget") or says "no longer" /
  "not anymore" (忘れて, もう...ない); update it when the line is
  a self-statement; otherwise keep.
- add: 0.8 when the line is a self-statement and no memory shown is about it; otherwise 0.2.
- decide: the verdict rule for every memory shown and the add rule, in one answer (exactly what
  the per-record questions answer one by one).
- review: delete memories that look time-limited (today, tomorrow, this week, 明日 ...).
- write_memory: that self-statement in the third person ("I love tea"
  -> "[offline] Loves tea"); a plan's end when the line says how long it lasts ("for the next 2
  weeks", "until 2026-12-31", これから3週間, 2026-12-31まで), counted from the line's own day in
  the deployment's zone; otherwise none (a rewrite keeps the memory's end).
- write_reply: lists the memories quoted in the prompt's system message (its
  ``<memory>`` tags, unescaped), and only those: never text from the conversation turns.
- write_diary: counts the people and their messages in the "name: text" transcript
  (lines by "memorybot" or carrying the stand-in reply label left out), in Japanese.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta, tzinfo
from html import unescape

from ..core.record.catalog import Language
from ..core.record.domain import JST, Decision, Exchange, Memory, MemoryDraft, Message, PromptMessage, Verdict
from ..core.record.ports import ModelError

OFFLINE_MEMORY_LABEL = "[offline]"
OFFLINE_REPLY_LABEL = "(offline stand-in)"
OFFLINE_DIARY_LABEL = "（オフライン代役）"
OFFLINE_DIARY_LABEL_EN = "(offline stand-in)"

WORTH_YES = ADD_YES = 0.8
WORTH_NO = ADD_NO = 0.2

BOT_NAMES = frozenset({"memorybot", "bot"})

_SELF_EN = re.compile(
    r"\b(?:i\s+(?:really\s+|also\s+|just\s+)?"
    r"(?:like|love|hate|enjoy|prefer|am|have|had|work|live|play|study|want|need|plan|will|was|got|started|moved"
    r"|bought|try|tried|go|went|visit|visited|use|drink|eat|cook|run|watch|read|speak|met|joined|quit|adopted|married)"
    r"|i'm|i've|i'll|i'd|my|going\s+to|gonna)\b",
    re.IGNORECASE,
)
_SELF_JA = re.compile(
    r"好き|嫌い|大好き|私は|僕は|俺は|わたしは|私の|僕の|俺の|予定|つもり|住んで|働いて|飼って|始めた"
)
_FORGET = re.compile(
    r"\bno\s+longer\b|\bnot\s+anymore\b|\b(?:don't|do\s+not|doesn't|didn't)\b[^.!?]*\banymore\b"
    r"|忘れて(?![たいしま])|もう[^。！？]*(?:ない|ません|やめ)",
    re.IGNORECASE,
)
# "forget" asks to forget unless one of the two words before it says otherwise: "don't forget the
# milk", "I always forget my keys", "I tend to forget names" are ordinary lines, not requests.
_FORGET_WORD = re.compile(r"\bforget\b", re.IGNORECASE)
_NOT_A_REQUEST = frozenset(
    """don't dont do not never won't wont i we they he she always often sometimes usually easily tend might
    may can't cannot couldn't didn't doesn't shouldn't wouldn't""".split()
)
_TIME_LIMITED = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|this\s+(?:morning|afternoon|evening|week|weekend|month)|next\s+week)\b"
    r"|今日|明日|明後日|今夜|今晩|今週|来週|週末",
    re.IGNORECASE,
)

# Words that say nothing about what a memory is about, so sharing them means nothing.
_STOPWORDS = frozenset(
    """
    the and but for not you your are was were have has had will would can could should with from that this
    these those there their them they what when where which who why how about into onto over just also very
    really much many some any all more most less like likes liked love loves loved hate hates want wants need
    needs going gonna got get gets now then today tonight tomorrow yesterday week weekend month year next last
    forget forgot longer anymore don't doesn't didn't i'm i've i'll i'd its it's been being than too well
    offline stand-in still again always never maybe think know make made enjoy enjoys prefer prefers
    私 僕 俺 好 嫌 大好 予定 今日 明日 今 本人 忘 話 人
    """.split()
)
# English words of three letters or more; runs of kanji or katakana (one kanji can be a word: 猫).
_WORD = re.compile(r"[a-z][a-z'\-]{2,}|[\u4e00-\u9fff\u30a0-\u30ff]+", re.IGNORECASE)


@dataclass(frozen=True)
class _Line:
    author: str
    text: str


def _lines(transcript: str) -> list[_Line]:
    lines = []
    for raw in transcript.splitlines():
        author, sep, text = raw.partition(": ")
        if sep and author.strip():
            lines.append(_Line(author.strip(), text.strip()))
        elif lines and raw.strip():  # a message that spans lines
            lines[-1] = _Line(lines[-1].author, f"{lines[-1].text} {raw.strip()}")
    return lines


def _is_bot(line: _Line) -> bool:
    """A diary transcript line by the bot (the transcript is text: names are all it has)."""
    return line.author.lower() in BOT_NAMES or OFFLINE_REPLY_LABEL in line.text


def _speaker_message(exchange: Exchange) -> Message | None:
    """The speaker's newest own line (never the bot's, never anyone else's)."""
    own = [
        m for m in exchange.messages if not m.is_bot and m.author_id == exchange.speaker.user_id and m.content.strip()
    ]
    return own[-1] if own else None


def _speaker_line(exchange: Exchange) -> str | None:
    """What the speaker said last: the text of their newest own line."""
    message = _speaker_message(exchange)
    return message.content.strip() if message is not None else None


def _keywords(text: str) -> set[str]:
    text = text.replace(OFFLINE_MEMORY_LABEL, " ")
    return {w.lower() for w in _WORD.findall(text)} - _STOPWORDS


def _about(memory: Memory, said: set[str]) -> bool:
    """The line is about this memory: it shares a keyword with it and holds every one of the
    memory's keywords but at most one. Saying a fact again, or changing it, repeats what the fact
    is about and changes at most one thing (black tea for green, Oslo for Helsinki); a line that
    only shares the person a memory is about (a name, a relation) leaves two or more out. Each
    verdict sees one memory, so "the best match among the ten" is out of reach; this is a rule
    one memory at a time can apply."""
    keywords = _keywords(memory.text)
    return bool(keywords & said) and len(keywords - said) <= 1


def _is_forget(text: str) -> bool:
    """The line asks to forget, or says a fact no longer holds."""
    if _FORGET.search(text):
        return True
    for found in _FORGET_WORD.finditer(text):
        before = text[: found.start()].lower().split()[-2:]
        if not _NOT_A_REQUEST.intersection(word.strip(",;:") for word in before):
            return True
    return False


def _is_self_statement(text: str) -> bool:
    return not _is_forget(text) and bool(_SELF_EN.search(text) or _SELF_JA.search(text))


def _statement(exchange: Exchange) -> str | None:
    said = _speaker_line(exchange)
    return said if said is not None and _is_self_statement(said) else None


class OfflineDecisionModel:
    """STAND-IN for Jev (keyword rules, not a model). See the module docstring."""

    def worth(self, exchange: Exchange) -> float:
        said = _speaker_line(exchange)
        return WORTH_YES if said is not None and (_is_self_statement(said) or _is_forget(said)) else WORTH_NO

    def verdict(self, exchange: Exchange, memory: Memory) -> Verdict:
        said = _speaker_line(exchange)
        if said is None or not _about(memory, _keywords(said)):
            return Verdict.KEEP
        if _is_forget(said):
            return Verdict.DELETE
        return Verdict.UPDATE if _is_self_statement(said) else Verdict.KEEP

    def decide(
        self, exchange: Exchange, memories: Sequence[Memory], early: Callable[[Memory, object], None] | None = None
    ) -> Decision:
        """The per-record rules over every memory at once: the line's keywords taken once."""
        said = _speaker_line(exchange)
        if said is None:
            return Decision({m.memory_id: Verdict.KEEP for m in memories}, ADD_NO)
        words = _keywords(said)
        about = {m.memory_id for m in memories if _about(m, words)}
        statement = _is_self_statement(said)
        changed = Verdict.DELETE if _is_forget(said) else Verdict.UPDATE if statement else Verdict.KEEP
        verdicts = {m.memory_id: changed if m.memory_id in about else Verdict.KEEP for m in memories}
        return Decision(verdicts, ADD_YES if statement and not about else ADD_NO)

    def add(self, exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> float:
        statement = _statement(exchange)
        if statement is None:
            return ADD_NO
        said = _keywords(statement)
        covered = any(_about(m, said) for m, _ in verdicts)
        return ADD_NO if covered else ADD_YES

    def review(self, memory: Memory) -> Verdict:
        return Verdict.DELETE if _TIME_LIMITED.search(memory.text) else Verdict.KEEP


# First person -> third person, for the stand-in's memory texts. Order matters.
_THIRD_PERSON: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\bi\s+am\b|\bi'm\b", re.I), "is"),
    (re.compile(r"\bi\s+have\b|\bi've\b", re.I), "has"),
    (re.compile(r"\bi\s+will\b|\bi'll\b", re.I), "will"),
    (re.compile(r"\bi\s+would\b|\bi'd\b", re.I), "would"),
    (re.compile(r"\bi\s+was\b", re.I), "was"),
    (re.compile(r"\bi\s+(?:do\s+not|don't)\b", re.I), "does not"),
    (re.compile(r"\bi\s+(?:did\s+not|didn't)\b", re.I), "did not"),
    (re.compile(r"\bi\s+(?:can\s*not|can't)\b", re.I), "cannot"),
    (re.compile(r"\bi\s+(really|also|just)\s+(\w+)\b", re.I), lambda m: f"{m.group(1)} {_third(m.group(2))}"),
    (re.compile(r"\bi\s+(\w+)\b", re.I), lambda m: _third(m.group(1))),
    (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bme\b", re.I), "them"),
    (re.compile(r"^(?:私|僕|俺|わたし)は"), ""),
    (re.compile(r"(?:私|僕|俺|わたし)の"), "本人の"),
]
_PAST_OR_DONE = re.compile(r"(?:ed|s)$")
_UNCHANGED = frozenset(
    """can could must may might should shall went got bought saw made ate took met left came found lost began
    wrote ran did said told felt thought won gave sold built slept spent paid flew drove broke became""".split()
)


def _third(verb: str) -> str:
    lower = verb.lower()
    if _PAST_OR_DONE.search(lower) or lower in _UNCHANGED:
        return verb
    if lower.endswith(("sh", "ch", "o", "x")):
        return verb + "es"
    if len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(statement: str) -> str:
    text = statement.strip()
    for pattern, replacement in _THIRD_PERSON:
        text = pattern.sub(replacement, text)
    text = re.sub(r"\s+", " ", text).strip(" .!。！")
    return text[:1].upper() + text[1:]


# A quoted memory in the reply's system prompt: its text is escaped, so it holds no "<".
_QUOTED_MEMORY = re.compile(r"<memory(?:\s[^>]*)?>([^<]*)</memory>")


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "日": 1, "週間": 7, "か月": 30, "ヶ月": 30, "カ月": 30}
_LASTS_EN = re.compile(
    r"\bfor\s+(?:the\s+next\s+)?(\d{1,3}|a|an|one|two|three|four|five|six|ten)\s+(day|week|month)s?\b", re.I
)
_LASTS_JA = re.compile(r"(\d{1,3})\s*(日|週間|か月|ヶ月|カ月)")
_UNTIL_DATE = re.compile(r"\buntil\s+(\d{4}-\d{2}-\d{2})\b|(\d{4}-\d{2}-\d{2})\s*まで", re.I)


def plan_end(said: str, said_on: date) -> date | None:
    """The last day of a plan the line gives a length or an end date to, counted from ``said_on``
    (the line's own day): "for the next 2 weeks" said on 2026-11-24 -> 2026-12-08. None otherwise."""
    until = _UNTIL_DATE.search(said)
    if until is not None:
        try:
            return date.fromisoformat(until.group(1) or until.group(2))
        except ValueError:
            return None
    lasts = _LASTS_EN.search(said) or _LASTS_JA.search(said)
    if lasts is None:
        return None
    count = lasts.group(1).lower()
    days = (int(count) if count.isdigit() else _NUMBERS[count]) * _UNIT_DAYS[lasts.group(2).lower()]
    return said_on + timedelta(days=days) if days else None


class OfflineChatModel:
    """STAND-IN for the chat model (templates, not a model). See the module docstring."""

    zone: tzinfo | None = None  # the deployment's (the factory sets MEMORYBOT_TIMEZONE's; JST without it)

    def write_memory(self, exchange: Exchange, current: Memory | None) -> MemoryDraft:
        statement = _statement(exchange)
        said = _speaker_message(exchange)
        if statement is None or said is None:
            raise ModelError("offline stand-in: no self-statement to write down")
        end = plan_end(statement, said.created_at.astimezone(self.zone or JST).date())
        if end is None and current is not None:
            end = current.valid_until  # a line that gives no new end leaves the plan's as it was
        return MemoryDraft(f"{OFFLINE_MEMORY_LABEL} {third_person(statement)}", end)

    def write_reply(self, prompt: Sequence[PromptMessage]) -> str:
        system = next((m.content for m in prompt if m.role == "system"), "")
        remembered = [
            unescape(text).replace(OFFLINE_MEMORY_LABEL, "").strip() for text in _QUOTED_MEMORY.findall(system)
        ]
        if not remembered:
            return f"{OFFLINE_REPLY_LABEL} Hello! I don't remember anything about you yet."
        things = "thing" if len(remembered) == 1 else "things"
        return f"{OFFLINE_REPLY_LABEL} I remember {len(remembered)} {things} about you: " + "; ".join(remembered)

    def write_diary(self, transcript: str, language: Language = Language.JA) -> str:
        said = [line for line in _lines(transcript) if not _is_bot(line)]
        people = len({line.author for line in said})
        if language is Language.EN:
            if not said:
                return f"{OFFLINE_DIARY_LABEL_EN} Nobody talked today."
            return f"{OFFLINE_DIARY_LABEL_EN} Today {people} people sent {len(said)} messages."
        if not said:
            return f"{OFFLINE_DIARY_LABEL}今日は誰も話さなかった。"
        return f"{OFFLINE_DIARY_LABEL}今日は{people}人が{len(said)}件のメッセージを送った。"
