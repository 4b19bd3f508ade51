"""OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, Ollama...) through httpx.

``POST {OPENAI_BASE_URL}/chat/completions`` with the configured model and, when set,
``Authorization: Bearer $OPENAI_API_KEY``. Decisions ask for a JSON object
(``response_format: json_object``); a server that refuses that field (a 4xx whose
body names ``response_format``) is asked again without it, and not asked with it
again; the answer is then found in the text. The answer is parsed
strictly (see ``core/prompts.py``): anything but the expected object is a ``ModelError``.
429 is a throttle, retried (honouring Retry-After and ``retry-after-ms``) until the deadline and
then ``ModelUnavailable``; 5xx, timeouts and transport errors get a few quick retries and then
``ModelFailed`` (``retry.py``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

import httpx

from ..core import prompts
from ..core.domain import PromptMessage
from ..core.metrics import purpose_of
from ..core.ports import ModelError
from ..core.prompts import Question, TextTask
from . import llm_backend
from .json_http import JsonService, ServiceOptions, service_options
from .metering import NO_METER

if TYPE_CHECKING:
    from ..config import Settings

# Statuses with which servers without JSON mode refuse ``response_format``.
_JSON_MODE_REFUSALS = frozenset({400, 404, 415, 422})


@dataclass(frozen=True)
class Completion:
    text: str
    cut_off: bool  # finish_reason "length": the model hit max_tokens
    # The server's own count (``usage.prompt_tokens``, ``usage.completion_tokens``); 0 when it gave none.
    input_tokens: object = 0
    output_tokens: object = 0


class OpenAICompatibleClient:
    """One connection pool to one server; safe to share between threads."""

    def __init__(self, base_url: str, model: str, **options: Unpack[ServiceOptions]) -> None:
        if not base_url or not model:
            raise ValueError("OPENAI_BASE_URL and OPENAI_MODEL are required for the openai backend")
        self.model = model
        self._service = JsonService(base_url, **options)
        self._json_mode = True  # until the server refuses it
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleClient:
        return cls(settings.openai_base_url, settings.openai_model, **service_options(settings, "OPENAI_API_KEY"))

    def complete(
        self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float = 0.0, json_object: bool = False
    ) -> Completion:
        """The assistant's answer to ``messages``; ModelError on any failure."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        with self._lock:
            use_json_mode = json_object and self._json_mode
        if use_json_mode:
            response = self._post({**body, "response_format": {"type": "json_object"}})
            if not _refuses_json_mode(response):
                return self._content(response)
            with self._lock:
                self._json_mode = False
        return self._content(self._post(body))

    def close(self) -> None:
        self._service.close()

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        return self._service.post("/chat/completions", body, "chat completions")

    @staticmethod
    def _content(response: httpx.Response) -> Completion:
        if not response.is_success:
            raise ModelError(f"chat completions: HTTP {response.status_code}")
        try:
            answer = json.loads(response.content)
            choice = answer["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelError("chat completions: unexpected body") from exc
        if not isinstance(content, str):
            raise ModelError("chat completions: no text content")
        if choice.get("finish_reason") == "content_filter":
            raise ModelError("chat completions: filtered")
        usage = answer.get("usage") if isinstance(answer, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            content, choice.get("finish_reason") == "length", usage.get("prompt_tokens"), usage.get("completion_tokens")
        )

    def metered(self, purpose: str, messages: list[dict[str, str]], **options: Any) -> Completion:
        """``complete``, counted for the metrics as a request of ``purpose`` (adapters/metering.py)."""
        with (self._service.retrier.meter or NO_METER).call(purpose, self.model) as call:
            answer = self.complete(messages, **options)
            call.usage(answer.input_tokens, answer.output_tokens)
        return answer


def _refuses_json_mode(response: httpx.Response) -> bool:
    return response.status_code in _JSON_MODE_REFUSALS and b"response_format" in response.content


def _messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class OpenAIDecisionModel(llm_backend.AskingDecisionModel):
    """Jev's questions asked of a chat model in JSON mode, answered as strict JSON."""

    def __init__(self, client: OpenAICompatibleClient) -> None:
        self._client = client

    def _ask(self, question: Question) -> Any:
        answer = self._client.metered(
            purpose_of(question.name),
            _messages(question.system, question.user),
            max_tokens=question.max_tokens,
            json_object=True,
        )
        return question.parse(llm_backend.extract_json_object(answer.text))


class OpenAIChatModel(llm_backend.WritingChatModel):
    def __init__(self, client: OpenAICompatibleClient) -> None:
        self._client = client

    def _write(self, task: TextTask) -> str:
        answer = self._client.metered(
            purpose_of(task.name), _messages(task.system, task.user), max_tokens=task.max_tokens
        )
        return llm_backend.first_line(answer.text, cut_off=answer.cut_off)

    def write_reply(self, prompt: Sequence[PromptMessage]) -> str:
        system, turns = llm_backend.split_system(prompt)
        messages = [{"role": "system", "content": text} for text in system]
        messages += [{"role": t.role, "content": t.content} for t in turns]
        if not turns:
            raise ModelError("reply prompt has no conversation")
        answer = self._client.metered(
            "reply", messages, max_tokens=prompts.REPLY_MAX_TOKENS, temperature=prompts.REPLY_TEMPERATURE
        )
        return llm_backend.reply_text(answer.text)  # a reply cut short is still worth sending
