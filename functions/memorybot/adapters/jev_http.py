"""Jev over HTTP: the ``http`` decision backend.

Contract: JSON over POST to ``{JEV_URL}/worth``, ``/verdict``, ``/add`` and ``/review``,
with ``Authorization: Bearer $JEV_API_KEY`` when a key is set. Memory ids travel as
strings and times as fixed-width ISO 8601 UTC. Transport errors, timeouts and 429/5xx are
retried (``retry.py``) and end as ``ModelUnavailable``; any other non-2xx status or a body
that does not match the contract raises ``ModelError`` at once. The answer
must hold its key with the right JSON type (a number in [0, 1], or one of the verdicts
the question allows); extra keys are ignored, so the service can add fields.

One ``httpx.Client`` per instance: connections are reused, and the client is safe to
share between the extraction's verdict threads.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import httpx

from ..domain import Memory, Verdict, iso
from ..ports import ModelError
from .json_http import json_client, post_attempt
from .retry import Retrier, retrier_for
from .llm_prompts import MEMORY_VERDICTS, REVIEW_VERDICTS, parse_probability, parse_verdict


def memory_body(memory: Memory) -> dict[str, str]:
    return {"id": str(memory.memory_id), "text": memory.text, "updated_at": iso(memory.updated_at)}


class JevHttpDecisionModel:
    def __init__(
        self,
        base_url: str,
        *,
        timeout_seconds: float,
        api_key: str = "",
        max_connections: int = 20,
        transport: httpx.BaseTransport | None = None,
        retrier: Retrier | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("JEV_URL is required for the http decision model")
        self._timeout = timeout_seconds
        self._retrier = retrier or Retrier()
        self._client = json_client(
            base_url, timeout_seconds=timeout_seconds, api_key=api_key, max_connections=max_connections, transport=transport
        )

    @classmethod
    def from_settings(cls, settings: Any) -> "JevHttpDecisionModel":
        return cls(
            settings.jev_url,
            timeout_seconds=settings.model_timeout_seconds,
            api_key=settings.secret("JEV_API_KEY"),
            max_connections=max(settings.model_max_in_flight, 1),
            retrier=retrier_for(settings),
        )

    # The four questions of the DecisionModel port.

    def worth(self, exchange: str) -> float:
        return parse_probability(self._post("/worth", {"exchange": exchange}), exact=False)

    def verdict(self, exchange: str, memory: Memory) -> Verdict:
        answer = self._post("/verdict", {"exchange": exchange, "memory": memory_body(memory)})
        return parse_verdict(answer, MEMORY_VERDICTS, exact=False)

    def add(self, exchange: str, verdicts: Sequence[tuple[Memory, Verdict]]) -> float:
        body = {
            "exchange": exchange,
            "verdicts": [
                {"id": str(m.memory_id), "text": m.text, "verdict": Verdict(v).value} for m, v in verdicts
            ],
        }
        return parse_probability(self._post("/add", body), exact=False)

    def review(self, memory: Memory) -> Verdict:
        return parse_verdict(self._post("/review", {"memory": memory_body(memory)}), REVIEW_VERDICTS, exact=False)

    def close(self) -> None:
        self._client.close()

    def _post(self, path: str, body: dict[str, Any]) -> object:
        # Messages name the path and status only: never the exchange or a memory's text.
        what = f"jev {path}"
        response = self._retrier.call(
            lambda remaining: post_attempt(self._client, path, body, timeout=min(self._timeout, remaining), what=what), what
        )
        if not response.is_success:
            raise ModelError(f"jev {path}: HTTP {response.status_code}")
        try:
            return json.loads(response.content, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ModelError(f"jev {path}: body is not JSON") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")
