"""OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, Ollama...) through httpx.

``POST {OPENAI_BASE_URL}/chat/completions`` with the configured model and, when set,
``Authorization: Bearer $OPENAI_API_KEY``. Each decision (and the dated memory, whose answer is
``{"text", "validUntil"}``) asks for its own answer's JSON schema
(``response_format`` ``{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}``),
so a model that would drift from the form, small local ones above all, is held to it by the
server. A server that refuses it (a 4xx whose body names ``response_format`` or ``json_schema``)
is asked again in JSON mode (``{"type": "json_object"}``), and one that refuses that too, in plain
text, where the answer is then found in the text; each client remembers the step it reached (one
client is one server and model), so a refusing server is not asked the refused way again. The
answer is parsed strictly (see ``core/prompting/prompts.py``): anything but the expected object is a
``ModelError`` (``UnusableAnswer``).
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

from ..core.prompting import prompts
from ..core.prompting.prompts import Question, TextTask
from ..core.record.domain import PromptMessage
from ..core.record.metrics import purpose_of
from ..core.record.ports import ModelError, UnusableAnswer
from . import llm_backend
from .json_http import JsonService, ServiceOptions, service_options
from .metering import NO_METER

if TYPE_CHECKING:
    from ..config import Settings

# Statuses with which servers refuse a ``response_format`` they do not take.
_FORMAT_REFUSALS = frozenset({400, 404, 415, 422})

# How an answer's form is asked for, strictest first: the question's own schema, any JSON object,
# plain text (the prompt alone says the form).
SCHEMA, JSON_OBJECT, TEXT = "json_schema", "json_object", "text"
_FORMAT_STEPS = (SCHEMA, JSON_OBJECT, TEXT)


@dataclass(frozen=True)
class AnswerSchema:
    """The JSON schema an answer must follow, under a name (letters, digits, _ and -)."""

    name: str
    schema: dict[str, Any]


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
        self._format_step = 0  # index in _FORMAT_STEPS: the strictest form the server has not refused
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleClient:
        return cls(settings.openai_base_url, settings.openai_model, **service_options(settings, "OPENAI_API_KEY"))

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: AnswerSchema | None = None,
    ) -> Completion:
        """The assistant's answer to ``messages``; ModelError on any failure. With ``schema``, the
        answer is asked in the strictest form the server takes (its schema, JSON mode, text)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if schema is None:
            return self._content(self._post(body))
        with self._lock:
            step = self._format_step
        while _FORMAT_STEPS[step] != TEXT:
            kind = _FORMAT_STEPS[step]
            response = self._post({**body, "response_format": _response_format(kind, schema)})
            if not _refuses(response, kind):
                return self._content(response)
            step += 1
            with self._lock:  # remembered: the refused form is not asked of this server again
                self._format_step = max(self._format_step, step)
        return self._content(self._post(body))

    @property
    def answer_format(self) -> str:
        """The form a schema's answer is asked in now: json_schema, json_object or text."""
        with self._lock:
            return _FORMAT_STEPS[self._format_step]

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


def _response_format(kind: str, schema: AnswerSchema) -> dict[str, Any]:
    if kind == SCHEMA:
        return {"type": SCHEMA, "json_schema": {"name": schema.name, "strict": True, "schema": schema.schema}}
    return {"type": JSON_OBJECT}


def _refuses(response: httpx.Response, kind: str) -> bool:
    """The server refused this ``response_format`` (not the request for another reason)."""
    named = b"response_format" in response.content or kind.encode() in response.content
    return response.status_code in _FORMAT_REFUSALS and named


def _messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class OpenAIDecisionModel(llm_backend.AskingDecisionModel):
    """Jev's questions asked of a chat model, each with its answer's schema, answered as strict JSON."""

    def __init__(self, client: OpenAICompatibleClient) -> None:
        self._client = client

    def _ask(self, question: Question) -> Any:
        answer = self._client.metered(
            purpose_of(question.name),
            _messages(question.system, question.user),
            max_tokens=question.max_tokens,
            schema=AnswerSchema(question.tool_name, question.schema),
        )
        return question.parse(llm_backend.extract_json_object(answer.text))


class OpenAIChatModel(llm_backend.WritingChatModel):
    def __init__(self, client: OpenAICompatibleClient) -> None:
        self._client = client

    def _write(self, task: TextTask) -> str:
        """The first line; a JSON answer (the dated memory's, asked with its schema) whole, since
        a server that holds a model to a schema may have it spread the object over lines."""
        schema = AnswerSchema(task.name, task.schema) if task.schema is not None else None
        answer = self._client.metered(
            purpose_of(task.name), _messages(task.system, task.user), max_tokens=task.max_tokens, schema=schema
        )
        if schema is not None and answer.text.lstrip().startswith("{"):
            if answer.cut_off:
                raise UnusableAnswer("answer cut off at the token limit")
            return answer.text.strip()
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
