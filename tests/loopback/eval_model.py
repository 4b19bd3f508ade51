"""A loopback chat model that knows the eval data's labels, for ``OpenAIServer.responder``: it
answers each question of ``memorybot eval`` right, or wrong, or unparseably, on purpose, turn by
turn, so a test knows every figure the eval must print.

    model = LabelledModel(turns, wrong={"en-01-change"}, unparseable={"en-02-question"})
    LabelledModel.half_wrong(turns)          # every kind of turn wrong for every other person
    llm.responder = model                    # an OpenAIServer's
    DriftingModel(turns)                     # right only when the request carries its JSON schema

It tells the question by the prompt (the decision's ``{"verdicts"`` form, worth's
``{"probability"``, the memory writer's system prompt; anything else is the reply) and the turn
by its line, which is quoted in every prompt (each turn's line is its own in the data).

- right: worth 0.9 for a line worth keeping or a forget request, 0.1 otherwise; each memory its
  labelled verdict; the written memory with its labelled end.
- wrong: worth flipped; keep -> delete, update and delete -> keep; the end left off a plan and
  put on a durable fact (30 days after the line).
- unparseable: prose for the decision questions, a cut JSON object for the memory, a blank reply.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import timedelta
from typing import Any

from memorybot.core.prompting.prompts import MEMORY_WRITER
from memorybot.core.prompting.quoting import escape_text
from memorybot.ops.evaluation import Turn

WRONG_VERDICT = {"keep": "delete", "update": "keep", "delete": "keep"}
WRITER_OPENING = MEMORY_WRITER[:40]


def question_of(body: dict[str, Any]) -> str:
    """worth | decide | write | reply"""
    messages = body.get("messages", [])
    system = str(messages[0].get("content", "")) if messages else ""
    asked = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    if '{"verdicts"' in asked:
        return "decide"
    if '{"probability"' in asked:
        return "worth"
    if system.startswith(WRITER_OPENING):
        return "write"
    return "reply"


class LabelledModel:
    def __init__(
        self, turns: Sequence[Turn], *, wrong: Collection[str] = (), unparseable: Collection[str] = ()
    ) -> None:
        # Longest line first: a line that holds another is matched as itself.
        self._turns = sorted(turns, key=lambda t: -len(t.said))
        self.wrong = set(wrong)
        self.unparseable = set(unparseable)

    @classmethod
    def half_wrong(cls, turns: Sequence[Turn]) -> LabelledModel:
        """Wrong on half the turns of each language: the odd ones of one person, the even ones of
        the next (each person has six turns, one of each kind, in the same order), so every kind
        of turn is wrong as often as right."""
        wrong, seen = set(), dict[str, int]()
        for turn in turns:
            k = seen[turn.lang] = seen.get(turn.lang, -1) + 1
            if (k + k // 6) % 2 == 1:
                wrong.add(turn.id)
        return cls(turns, wrong=wrong)

    def turn_of(self, body: dict[str, Any]) -> Turn:
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        for turn in self._turns:
            if escape_text(turn.said) in text:
                return turn
        raise LookupError("no turn's line in the prompt")

    def __call__(self, body: dict[str, Any]) -> str:
        turn, question = self.turn_of(body), question_of(body)
        if turn.id in self.unparseable:
            return {"write": '{"text": "', "reply": " "}.get(question, "Hard to say, honestly.")
        return self.answer(turn, question, wrong=turn.id in self.wrong)

    @staticmethod
    def answer(turn: Turn, question: str, *, wrong: bool) -> str:
        if question == "worth":
            keep = turn.worth is not False
            return json.dumps({"probability": 0.9 if keep != wrong else 0.1})
        if question == "decide":
            verdicts = {m: (WRONG_VERDICT[v.value] if wrong else v.value) for m, v in turn.verdicts.items()}
            return json.dumps({"verdicts": verdicts, "add": 0.9 if turn.kind == "plan" else 0.1})
        if question == "write":
            expected = turn.write.valid_until if turn.write is not None else None
            if wrong:
                late = turn.said_at.date() + timedelta(days=30)
                expected = None if expected is not None else late
            end = expected.isoformat() if expected is not None else None
            return json.dumps({"text": "A fact about the speaker", "validUntil": end}, ensure_ascii=False)
        return "Nice to hear from you."


class DriftingModel(LabelledModel):
    """Right when the request asks for its JSON schema; in JSON mode an object of its own shape,
    in plain text prose (the memory: a plain line, without its end): a small local model held to
    the form only by the server."""

    def __call__(self, body: dict[str, Any]) -> str:
        turn, question = self.turn_of(body), question_of(body)
        asked = (body.get("response_format") or {}).get("type", "text")
        if question in ("worth", "decide", "write") and asked != "json_schema":
            if asked == "json_object":
                return json.dumps({"answer": "yes", "confidence": "high"})
            if question == "write":  # a plain line: a memory without an end
                return "They are away for a while."
            return "I would say this is probably worth remembering."
        return self.answer(turn, question, wrong=False)
