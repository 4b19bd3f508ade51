"""What every LLM backend (OpenAI-compatible, Bedrock) shares: the decision and writing ports
as the core's prompts (``core/prompting/prompts.py``, where all prompt text lives), the JSON object or
first line taken out of a text answer, and the reply prompt mapped onto a backend's turns.

Parsing never repairs an answer (see ``core/prompting/prompts.py``); error messages carry no memory or
message text (they may end up in logs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import Any

from ..core.prompting.prompts import (
    Question,
    TextTask,
    decide_question,
    diary_task,
    memory_task,
    parse_memory_answer,
    review_question,
    worth_question,
)
from ..core.record.catalog import Language
from ..core.record.dates import PromptTime
from ..core.record.domain import Decision, Exchange, Memory, MemoryDraft, PromptMessage, Verdict, utcnow
from ..core.record.ports import ModelError, UnusableAnswer

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
        raise UnusableAnswer("answer is not text")
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
    raise UnusableAnswer("no JSON object in the answer")


def first_line(text: object, *, cut_off: bool = False) -> str:
    """The first non-empty line of a text answer (memories and the diary are one line).

    ``cut_off``: the model stopped at its token limit. A first line that was still
    being written when it stopped is half a sentence, not an answer.
    """
    if not isinstance(text, str):
        raise UnusableAnswer("answer is not text")
    for line in text.splitlines(keepends=True):
        if line.strip():
            if cut_off and line == line.rstrip("\r\n"):
                raise UnusableAnswer("answer cut off at the token limit")
            return line.strip()
    raise UnusableAnswer("empty answer")


def reply_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UnusableAnswer("empty reply")
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


class DatedPrompts:
    """The deployment's time zone for a backend's prompts (the factory sets it from
    ``MEMORYBOT_TIMEZONE``): today, and each line's own time, in that zone."""

    zone: tzinfo | None = None  # None: undated prompts (a backend built outside the factory)
    clock: Callable[[], datetime] = staticmethod(utcnow)

    def _when(self) -> PromptTime | None:
        return PromptTime(self.clock(), self.zone) if self.zone is not None else None


class AskingDecisionModel(DatedPrompts):
    """``ports.DecisionModel`` for an LLM backend: each question is one request with a strict JSON
    answer (the extraction's verdicts and add together, in one). A backend supplies ``_ask``
    (send the question, return its parsed answer)."""

    def _ask(self, question: Question) -> Any:
        raise NotImplementedError

    def worth(self, exchange: Exchange) -> float:
        return self._ask(worth_question(exchange))

    def decide(
        self, exchange: Exchange, memories: Sequence[Memory], early: Callable[[Memory, object], None] | None = None
    ) -> Decision:
        return self._ask(decide_question(exchange, memories, self._when()))  # one answer: nothing is known early

    def review(self, memory: Memory) -> Verdict:
        return self._ask(review_question(memory, self._when()))


class WritingChatModel(DatedPrompts):
    """The one-line writing tasks of ``ports.ChatModel`` for an LLM backend. A backend
    supplies ``_write`` (send the task, return its first line) and ``write_reply``."""

    def _write(self, task: TextTask) -> str:
        raise NotImplementedError

    def write_memory(self, exchange: Exchange, current: Memory | None) -> MemoryDraft:
        """The memory from ``{"text", "validUntil"}`` or a plain line (then no end). Undated (no
        zone), the task asks for the text alone."""
        when = self._when()
        answer = self._write(memory_task(exchange, current, when))
        if when is None:
            return MemoryDraft(answer)
        return parse_memory_answer(answer, said_on=exchange.since.astimezone(when.zone).date())

    def write_diary(self, transcript: str, language: Language = Language.JA) -> str:
        return self._write(diary_task(transcript, language))
