"""Prompts and answer parsing shared by the LLM backends (OpenAI-compatible, Bedrock).

The decision questions get a strict JSON answer: ``{"probability": number}`` or
``{"verdict": "..."}`` and nothing else. Parsing never repairs an answer: a string
"0.7", a boolean, a probability outside [0, 1], an unknown verdict or an extra key
is a ``ModelError``, never a decision.

Whose memory: every question and memory task is about the exchange's speaker (the
review's: the memory's owner). Prompts name the speaker once (a ``<speaker>`` tag with
the sanitised display name) and mark each line by who wrote it (``<message
from="speaker">`` / ``<message from="bot">``), never by a nickname, and ask only about
facts the speaker stated about themselves.

Injection: message, memory and transcript text is quoted data, escaped inside its tag
(see ``memorybot.core.quoting``), and each system prompt says so.

Privacy: a memory rewrite prompt holds the exchange and the one record being
rewritten, never the rest of the profile. Error messages carry no memory or
message text (they may end up in logs).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import quoting
from ..core.domain import MEMORY_VERDICTS, REVIEW_VERDICTS, Exchange, Memory, PromptMessage, Verdict
from ..core.ports import ModelError

# Output budgets. Decisions are one tiny JSON object; texts are one line (reply: a few).
DECISION_MAX_TOKENS = 100
MEMORY_MAX_TOKENS = 200
DIARY_MAX_TOKENS = 200
REPLY_MAX_TOKENS = 800
REPLY_TEMPERATURE = 0.7


@dataclass(frozen=True)
class Question:
    """One decision question, ready for any backend: prompts, the answer schema, its tool name."""

    name: str  # worth | verdict | add | review
    system: str
    user: str
    schema: dict[str, Any]
    tool_name: str
    allowed: tuple[Verdict, ...] = ()  # empty: the answer is a probability

    def parse(self, answer: object) -> float | Verdict:
        if self.allowed:
            return parse_verdict(answer, self.allowed)
        return parse_probability(answer)


@dataclass(frozen=True)
class TextTask:
    """One writing task: a system prompt, a user prompt and an output budget."""

    name: str  # write_memory | write_diary
    system: str
    user: str
    max_tokens: int


# ---------------------------------------------------------------- schemas


def probability_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["probability"],
        "additionalProperties": False,
    }


def verdict_schema(allowed: Sequence[Verdict]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": [v.value for v in allowed]}},
        "required": ["verdict"],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------- decision prompts

_DECIDER = (
    "You are Jev, the memory gatekeeper of a Discord bot that keeps a few short facts about each person "
    "(preferences, relationships, ongoing situations, plans). You never write memories; you only decide. "
)
# Whose memory it is: the speaker's, and only from what they said about themselves.
_SPEAKER_RULE = (
    "Every question is about ONE person, the speaker (the <speaker> tag). Only facts the speaker states "
    'about their own life count, including their relationships ("my sister lives in Kobe"); what the bot '
    "said, and what the speaker reports other people said or like, are not facts about the speaker. "
)
_PROBABILITY_FORMAT = (
    'Answer with ONLY a JSON object of the form {"probability": <number between 0 and 1>} and nothing else.'
)


def _verdict_format(allowed: Sequence[Verdict]) -> str:
    options = " | ".join(f'"{v.value}"' for v in allowed)
    return f'Answer with ONLY a JSON object of the form {{"verdict": {options}}} and nothing else.'


def _decision_system(task: str, answer_format: str) -> str:
    return _DECIDER + _SPEAKER_RULE + task + " " + quoting.QUOTED_DATA_RULE + " " + answer_format


def worth_question(exchange: Exchange) -> Question:
    system = _decision_system(
        "Given the speaker's recent exchange with the bot, estimate the probability that the speaker stated "
        "durable information about themselves that is worth remembering. Small talk, questions and greetings "
        "are not worth keeping.",
        _PROBABILITY_FORMAT,
    )
    user = f"Exchange:\n{quoting.exchange_block(exchange)}"
    return Question("worth", system, user, probability_schema(), "answer_worth")


def verdict_question(exchange: Exchange, memory: Memory) -> Question:
    system = _decision_system(
        "Given the speaker's exchange and ONE stored memory about the speaker, decide what to do with that "
        'memory: "keep" if what the speaker said does not change it, "update" if the speaker refines or '
        'corrects it, "delete" if the speaker shows it is no longer true or asks to forget it.',
        _verdict_format(MEMORY_VERDICTS),
    )
    user = (
        f"Exchange:\n{quoting.exchange_block(exchange)}\n\n"
        f"Stored memory about the speaker:\n{quoting.memory_with_metadata(memory)}"
    )
    return Question("verdict", system, user, verdict_schema(MEMORY_VERDICTS), "answer_verdict", MEMORY_VERDICTS)


def add_question(exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> Question:
    system = _decision_system(
        "Given the speaker's exchange and the speaker's existing memories with the verdict already reached for "
        "each, estimate the probability that the speaker stated a NEW fact about themselves that none of these "
        "memories covers (after the verdicts are applied) and that should be added as a new memory.",
        _PROBABILITY_FORMAT,
    )
    listed = "\n".join(quoting.memory_tag(m, id=m.memory_id, verdict=Verdict(v).value) for m, v in verdicts)
    user = (
        f"Exchange:\n{quoting.exchange_block(exchange)}\n\n"
        f"The speaker's existing memories and verdicts:\n<memories>\n{listed or '(none)'}\n</memories>"
    )
    return Question("add", system, user, probability_schema(), "answer_add")


def review_question(memory: Memory) -> Question:
    system = _decision_system(
        "This memory about the speaker has not been updated for at least 30 days. Decide whether it is still "
        'durable profile information ("keep") or a time-limited detail that no longer matters ("delete"). '
        "When unsure, keep.",
        _verdict_format(REVIEW_VERDICTS),
    )
    user = f"{quoting.owner_tag(memory.user_id)}\nMemory:\n{quoting.memory_with_metadata(memory)}"
    return Question("review", system, user, verdict_schema(REVIEW_VERDICTS), "answer_review", REVIEW_VERDICTS)


# ---------------------------------------------------------------- writing prompts


def memory_task(exchange: Exchange, current: Memory | None) -> TextTask:
    """The rewrite sees the exchange and ``current`` only: never the rest of the profile."""
    rules = (
        "You write the memories of a Discord bot: one short natural-language fact about the speaker (the "
        "<speaker> tag), such as a preference, a relationship, an ongoing situation or a plan, taken only from "
        'what the speaker said about themselves (their from="speaker" messages), never from the bot\'s lines or '
        "from what others said. Write it in the third person without their name, in the language of the "
        "speaker, on ONE line, at most 200 characters. Output only the fact: no quotes, no tags, no preamble. "
        + quoting.QUOTED_DATA_RULE
    )
    block = quoting.exchange_block(exchange)
    if current is None:
        return TextTask("write_memory", rules, f"Exchange:\n{block}\n\nWrite the new memory.", MEMORY_MAX_TOKENS)
    user = (
        f"Exchange:\n{block}\n\nThe memory to rewrite:\n{quoting.memory_tag(current)}\n\n"
        "Rewrite this memory so that it reflects what the speaker said."
    )
    return TextTask("write_memory", rules, user, MEMORY_MAX_TOKENS)


def diary_task(transcript: str) -> TextTask:
    system = (
        "あなたはDiscordサーバーの日記係です。与えられた会話ログから、その日の出来事を日本語の一文で書いてください。"
        "出力は一行だけ、前置きや引用符は不要です。個人の秘密には触れないでください。" + quoting.QUOTED_DATA_RULE_JA
    )
    return TextTask("write_diary", system, f"会話ログ:\n{quoting.transcript_block(transcript)}", DIARY_MAX_TOKENS)


# ---------------------------------------------------------------- answer parsing


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _loads(text: str) -> Any:
    # NaN / Infinity are not JSON; Python's json accepts them unless told not to.
    return json.loads(text, parse_constant=_reject_constant)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_json_object(text: object) -> dict[str, Any]:
    """The JSON object in a model's text answer: the whole text, a fenced block, or the first
    ``{...}`` that parses as an object. Anything else is a ModelError."""
    if not isinstance(text, str):
        raise ModelError("answer is not text")
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = _loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ModelError("no JSON object in the answer")


def _only_key(answer: object, key: str, *, exact: bool) -> object:
    if not isinstance(answer, Mapping):
        raise ModelError("answer is not a JSON object")
    if key not in answer:
        raise ModelError(f"answer has no {key!r}")
    if exact and set(answer) != {key}:
        raise ModelError(f"answer has keys other than {key!r}")
    return answer[key]


def parse_probability(answer: object, *, exact: bool = True) -> float:
    """``{"probability": p}`` with p a real JSON number in [0, 1]; never coerced or clamped."""
    value = _only_key(answer, "probability", exact=exact)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError("probability is not a number")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ModelError("probability outside [0, 1]")
    return value


def parse_verdict(answer: object, allowed: Iterable[Verdict], *, exact: bool = True) -> Verdict:
    """``{"verdict": v}`` with v exactly one of ``allowed`` (lower case, as the schema says)."""
    value = _only_key(answer, "verdict", exact=exact)
    if not isinstance(value, str):
        raise ModelError("verdict is not a string")
    for verdict in allowed:
        if value == verdict.value:
            return verdict
    raise ModelError("verdict not allowed for this question")


def first_line(text: object, *, cut_off: bool = False) -> str:
    """The first non-empty line of a text answer (memories and the diary are one line).

    ``cut_off``: the model stopped at its token limit. A first line that was still
    being written when it stopped is half a sentence, not an answer.
    """
    if not isinstance(text, str):
        raise ModelError("answer is not text")
    for line in text.splitlines(keepends=True):
        if line.strip():
            if cut_off and line == line.rstrip("\r\n"):
                raise ModelError("answer cut off at the token limit")
            return line.strip()
    raise ModelError("empty answer")


def reply_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ModelError("empty reply")
    return text.strip()


# ---------------------------------------------------------------- reply prompt mapping

_ROLES = frozenset({"system", "user", "assistant"})


def split_system(prompt: Sequence[PromptMessage]) -> tuple[list[str], list[PromptMessage]]:
    """System texts (the core sends one, first) and the conversation turns, in order."""
    system: list[str] = []
    turns: list[PromptMessage] = []
    for message in prompt:
        if message.role not in _ROLES:
            raise ModelError("unknown prompt role")
        if message.role == "system":
            system.append(message.content)
        else:
            turns.append(message)
    return system, turns


# Bedrock needs a conversation that starts with a user turn.
CONVERSATION_OPENER = "(The conversation so far.)"


def alternating_turns(turns: Sequence[PromptMessage]) -> list[PromptMessage]:
    """Consecutive same-role turns merged (blank line between), first turn a user turn."""
    merged: list[PromptMessage] = []
    for turn in turns:
        if merged and merged[-1].role == turn.role:
            merged[-1] = PromptMessage(turn.role, f"{merged[-1].content}\n\n{turn.content}")
        else:
            merged.append(turn)
    if merged and merged[0].role != "user":
        merged.insert(0, PromptMessage("user", CONVERSATION_OPENER))
    return merged


class AskingDecisionModel:
    """``ports.DecisionModel`` for an LLM backend: each question is a prompt with a strict
    JSON answer. A backend supplies ``_ask`` (send the question, return the parsed answer)."""

    def _ask(self, question: Question) -> Any:
        raise NotImplementedError

    def worth(self, exchange: Exchange) -> float:
        return self._ask(worth_question(exchange))

    def verdict(self, exchange: Exchange, memory: Memory) -> Verdict:
        return self._ask(verdict_question(exchange, memory))

    def add(self, exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> float:
        return self._ask(add_question(exchange, verdicts))

    def review(self, memory: Memory) -> Verdict:
        return self._ask(review_question(memory))


class WritingChatModel:
    """The one-line writing tasks of ``ports.ChatModel`` for an LLM backend. A backend
    supplies ``_write`` (send the task, return its first line) and ``write_reply``."""

    def _write(self, task: TextTask) -> str:
        raise NotImplementedError

    def write_memory(self, exchange: Exchange, current: Memory | None) -> str:
        return self._write(memory_task(exchange, current))

    def write_diary(self, transcript: str) -> str:
        return self._write(diary_task(transcript))
