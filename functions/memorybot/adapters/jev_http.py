"""Jev over HTTP: the ``http`` decision backend.

Contract: JSON over POST to ``{JEV_URL}/worth``, ``/decide`` and ``/review`` (and, for services
written before ``/decide``, ``/verdict`` and ``/add``),
with ``Authorization: Bearer $JEV_API_KEY`` when a key is set. Memory ids travel as
strings and times as fixed-width ISO 8601 UTC. 429 is a throttle, retried until the deadline
and then ``ModelUnavailable`` ("not yet"); 5xx, timeouts and transport errors get a few quick
retries and then ``ModelFailed`` (``retry.py``); any other non-2xx status or a body
that does not match the contract raises ``ModelError`` at once. The answer
must hold its key with the right JSON type (a number in [0, 1], or one of the verdicts
the question allows); extra keys are ignored, so the service can add fields.

Every request says whose memory is being decided:

- ``speaker``: ``{"id": "<user snowflake>", "name": "<display name>"}``. For ``/worth``,
  ``/verdict`` and ``/add`` the person whose exchange it is; ``name`` is their display
  name sanitised (one line, at most 40 characters, no control characters, no colon,
  angle or square brackets, double quote, backslash or backtick, and
  ``"user <id>"`` instead of an empty name or one that reads "memorybot" / "bot").
  For ``/review`` the memory's owner, with ``"name": null``.
- ``messages``: the speaker's own conversation with the bot, oldest first, each
  ``{"author_id": str, "author_name": str, "content": str, "is_bot": bool, "at": str}`` (``at``:
  the message's own time, ISO 8601 UTC, from its snowflake). Lines
  with ``"is_bot": false`` are the speaker's (``author_id`` is the speaker's id); lines
  with ``"is_bot": true`` are the bot's replies to them (``author_name`` "memorybot").
  Nobody else's words are ever in it. ``[]`` for ``/review``.

Decide from ``speaker`` and ``messages``: only what the speaker said about themselves
counts. The ``exchange`` string (every question but ``/review``) is the same lines
as ``"name: text"`` text, kept for services written before ``messages`` existed; a
display name there is only a label, not a proof of authorship.

Bodies:

- ``/worth``: ``{speaker, messages, exchange}`` -> ``{"probability": p}``
- ``/decide``: ``{speaker, messages, exchange, memories: [{id, text, updated_at}, ...]}``
  -> ``{"verdicts": {"<id>": "keep" | "update" | "delete", ...}, "add": p}``: one verdict for
  each memory sent and the probability that the exchange holds a new fact none of them covers.
  Read per record: a memory whose id is missing, or whose verdict is not one of the three, is
  left untouched; an id not sent is ignored; an ``add`` that is not a number in [0, 1] is no add.
- ``/verdict``: ``{speaker, messages, exchange, memory: {id, text, updated_at}}``
  -> ``{"verdict": "keep" | "update" | "delete"}``
- ``/add``: ``{speaker, messages, exchange, verdicts: [{id, text, verdict}]}``
  -> ``{"probability": p}``
- ``/review``: ``{speaker, messages: [], memory: {id, text, updated_at}}``
  -> ``{"verdict": "keep" | "delete"}``

A service without ``/decide`` answers it 404 or 405: the backend then asks ``/verdict`` for each
memory (concurrently) and ``/add`` with the verdicts, and does not ask ``/decide`` again for as
long as the process lives.

Memory and message text is data written by people: a service that puts it into a
prompt must quote it as data, never as instructions.

One ``httpx.Client`` per instance: connections are reused, and the client is safe to
share between threads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import httpx

from ..core.prompting.decisions import decide_per_record
from ..core.prompting.prompts import parse_decision, parse_probability, parse_verdict
from ..core.record import memory_record
from ..core.record.domain import (
    BOT_NAME,
    MEMORY_VERDICTS,
    REVIEW_VERDICTS,
    Decision,
    Exchange,
    Memory,
    Verdict,
    iso,
    plain_name,
)
from ..core.record.memory_record import Shape
from ..core.record.ports import ModelError, UnusableAnswer
from .json_http import JsonService, ServiceOptions, service_options
from .metering import NO_METER

if TYPE_CHECKING:
    from ..config import Settings


def memory_body(memory: Memory) -> dict[str, Any]:
    """The contract's ``memory``: the record's Jev shape (core/record/memory_record.py)."""
    return memory_record.encode(memory, Shape.JEV)


def exchange_body(exchange: Exchange) -> dict[str, Any]:
    """Whose exchange it is, its lines marked by who wrote them, and the legacy rendered string."""
    speaker = exchange.speaker
    speaker_name = plain_name(speaker.name, speaker.user_id)
    return {
        "speaker": {"id": str(speaker.user_id), "name": speaker_name},
        "messages": [
            {
                "author_id": str(m.author_id),
                # The same names as the rendered exchange: a nickname never relabels a line.
                "author_name": BOT_NAME if m.is_bot else speaker_name,
                "content": m.content,
                "is_bot": bool(m.is_bot),
                "at": iso(m.created_at),  # the message's own time (its snowflake's), UTC
            }
            for m in exchange.messages
        ],
        "exchange": exchange.render(),
    }


def review_body(memory: Memory) -> dict[str, Any]:
    """No conversation: the speaker is the memory's owner, whose name is not known here."""
    return {"speaker": {"id": str(memory.user_id), "name": None}, "messages": [], "memory": memory_body(memory)}


# The metrics' purpose of each path (/verdict and /add are the one decision, asked per record).
_PURPOSES = {"/worth": "worth", "/review": "review"}

# What a service without the question answers: the path is unknown, or not for POST.
_NOT_OFFERED = frozenset({404, 405})


class JevHttpDecisionModel:
    def __init__(self, base_url: str, **options: Unpack[ServiceOptions]) -> None:
        if not base_url:
            raise ValueError("JEV_URL is required for the http decision model")
        self._service = JsonService(base_url, **options)
        self._concurrency = max(options.get("max_connections", 20), 1)  # the per-record verdicts at once
        self._decide_offered = True  # until the service answers /decide 404 or 405
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> JevHttpDecisionModel:
        return cls(settings.jev_url, **service_options(settings, "JEV_API_KEY"))

    # The DecisionModel port, and the per-record questions of services without /decide.

    def worth(self, exchange: Exchange) -> float:
        return parse_probability(self._post("/worth", exchange_body(exchange)), exact=False)

    def decide(
        self, exchange: Exchange, memories: Sequence[Memory], early: Callable[[Memory, object], None] | None = None
    ) -> Decision:
        with self._lock:
            offered = self._decide_offered
        if offered:
            body = {**exchange_body(exchange), "memories": [memory_body(m) for m in memories]}
            response = self._metered_post("/decide", body)
            if response.status_code not in _NOT_OFFERED:
                return parse_decision(self._answer("/decide", response), [m.memory_id for m in memories])
            with self._lock:
                self._decide_offered = False
        return decide_per_record(self, exchange, memories, early, concurrency=self._concurrency)

    def verdict(self, exchange: Exchange, memory: Memory) -> Verdict:
        answer = self._post("/verdict", {**exchange_body(exchange), "memory": memory_body(memory)})
        return parse_verdict(answer, MEMORY_VERDICTS, exact=False)

    def add(self, exchange: Exchange, verdicts: Sequence[tuple[Memory, Verdict]]) -> float:
        body = {
            **exchange_body(exchange),
            "verdicts": [{"id": str(m.memory_id), "text": m.text, "verdict": Verdict(v).value} for m, v in verdicts],
        }
        return parse_probability(self._post("/add", body), exact=False)

    def review(self, memory: Memory) -> Verdict:
        return parse_verdict(self._post("/review", review_body(memory)), REVIEW_VERDICTS, exact=False)

    def close(self) -> None:
        self._service.close()

    def _post(self, path: str, body: dict[str, Any]) -> object:
        return self._answer(path, self._metered_post(path, body))

    def _metered_post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """One request, counted for the metrics (model ``jev``; the service reports no tokens)."""
        with (self._service.retrier.meter or NO_METER).call(_PURPOSES.get(path, "decide"), "jev"):
            return self._service.post(path, body, f"jev {path}")

    @staticmethod
    def _answer(path: str, response: httpx.Response) -> object:
        # Messages name the path and status only: never the exchange or a memory's text.
        if not response.is_success:
            raise ModelError(f"jev {path}: HTTP {response.status_code}")
        try:
            return json.loads(response.content, parse_constant=_reject_constant)
        except ValueError as exc:
            raise UnusableAnswer(f"jev {path}: body is not JSON") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")
