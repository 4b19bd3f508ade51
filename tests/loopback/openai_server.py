"""A fake OpenAI-compatible chat-completions server (POST /v1/chat/completions).

``url`` (and ``start()``) is the base URL *with* ``/v1``, as OPENAI_BASE_URL expects.
Each completion's content comes from, in order: a one-shot ``reply_once`` text, the
sticky ``reply`` text, ``responder(request_body) -> str`` if set, else a default that
reads the prompt: the one decision (a ``{"verdicts": ...}`` question) gets ``default_verdict``
for every ``<memory id="...">`` shown and ``default_probability`` as its add, a JSON
``{"verdict": ...}`` question gets ``{"verdict": default_verdict}``, a ``{"probability": ...}``
question ``{"probability": default_probability}``, the dated writing task (it asks for
``{"text", "validUntil"}``) ``{"text": default_text, "validUntil": default_valid_until}``, anything
else ``default_text``.

    with OpenAIServer(api_key="sk-test") as llm:
        llm.reply('{"probability": 0.7}')
        llm.reply_once("a text for the next call only")
        llm.reject_response_format = True   # 400 naming response_format, like servers without JSON mode
        llm.refused_formats = {"json_schema"}  # 400 for these response_format types only
        llm.completions()[-1]["messages"]    # request bodies, parsed
        llm.finish_reason = "length"         # as if the model hit max_tokens
        llm.answer(llm.COMPLETIONS_PATH, raw=b"{broken")   # bypass the envelope entirely
        llm.usage_given                      # each completion's usage fields, as answered
        llm.clear()                          # back to the constructor's defaults, no requests

See ``loopback`` (the package docstring) for the common API: delays, scripted
statuses, recorded requests, ``api_key``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel

from . import Answer, LoopbackServer, Recorded


class OpenAIServer(LoopbackServer):
    """Also ``POST /v1/embeddings``: unless scripted, each input gets a deterministic vector (the
    offline stand-in's hashed n-grams, ``dimensions`` long, 64 by default), deliberately not
    normalised (times 3), as some compatible servers answer."""

    COMPLETIONS_PATH = "/v1/chat/completions"
    EMBEDDINGS_PATH = "/v1/embeddings"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default_probability: float = 0.9,
        default_verdict: str = "keep",
        default_text: str = "(fake llm) ok",
    ) -> None:
        super().__init__(api_key=api_key)
        self._content_lock = threading.Lock()
        self._initial = (default_probability, default_verdict, default_text)
        self._reset_content()

    def _reset_content(self) -> None:
        with self._content_lock:
            self._sticky_text: str | None = None
            self._once_texts: deque[str] = deque()
        self.responder: Callable[[dict[str, Any]], str] | None = None
        self.default_probability, self.default_verdict, self.default_text = self._initial
        self.default_valid_until: str | None = None  # the dated writer's end ("YYYY-MM-DD"), None: durable
        self.reject_response_format = False
        self.refused_formats: set[str] = set()
        self.finish_reason = "stop"
        self.usage_given: list[dict[str, int]] = []  # each completion's usage, as answered

    def clear(self) -> None:
        """Also forgets scripted texts, the responder and the flags (constructor defaults again)."""
        super().clear()
        self._reset_content()

    def base_url(self, root: str) -> str:
        return f"{root}/v1"

    def reply(self, content: str | None) -> None:
        """Every completion answers ``content`` (None: back to the responder/defaults)."""
        with self._content_lock:
            self._sticky_text = content

    def reply_once(self, content: str) -> None:
        with self._content_lock:
            self._once_texts.append(content)

    def completions(self) -> list[dict[str, Any]]:
        return [r.json for r in self.requests_to(self.COMPLETIONS_PATH)]

    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r.json for r in self.requests_to(self.EMBEDDINGS_PATH)]

    def _embeddings(self, request: Recorded) -> Answer:
        try:
            body = json.loads(request.body)
            inputs = body["input"]
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
            model = OfflineEmbeddingModel(int(body.get("dimensions") or 64))
        except (ValueError, KeyError, TypeError):
            return Answer(400, {"error": {"message": "bad embeddings request"}})
        data = [
            {"object": "embedding", "index": i, "embedding": [3 * x for x in model.embed_one(text).vector]}
            for i, text in enumerate(inputs)
        ]
        return Answer(body={"object": "list", "data": data[::-1], "model": body.get("model", "")})

    def default_answer(self, request: Recorded) -> Answer:
        if request.method == "POST" and request.path == self.EMBEDDINGS_PATH:
            return self._embeddings(request)
        if request.method != "POST" or request.path != self.COMPLETIONS_PATH:
            return Answer(404, {"error": {"message": "not found"}})
        try:
            body = json.loads(request.body)
        except ValueError:
            return Answer(400, {"error": {"message": "body is not JSON"}})
        asked_format = body.get("response_format")
        if asked_format is not None and (
            self.reject_response_format or str(asked_format.get("type")) in self.refused_formats
        ):
            message = f"Unsupported parameter: 'response_format' of type '{asked_format.get('type')}'"
            return Answer(400, {"error": {"message": message, "type": "invalid_request_error"}})
        content = self._content(body)
        usage = usage_of(body, content)
        self.usage_given.append(usage)
        return Answer(body=completion(content, body.get("model", ""), self.finish_reason, usage))

    def _content(self, body: dict[str, Any]) -> str:
        with self._content_lock:
            if self._once_texts:
                return self._once_texts.popleft()
            if self._sticky_text is not None:
                return self._sticky_text
        if self.responder is not None:
            return self.responder(body)
        asked = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        if '{"verdicts"' in asked:  # the one decision: every memory shown, and the add
            ids = _MEMORY_ID.findall(asked)
            return json.dumps({"verdicts": dict.fromkeys(ids, self.default_verdict), "add": self.default_probability})
        if '{"verdict"' in asked:
            return json.dumps({"verdict": self.default_verdict})
        if '{"probability"' in asked:
            return json.dumps({"probability": self.default_probability})
        if '"validUntil"' in asked:  # the dated writer, answered as a model that follows the format
            return json.dumps({"text": self.default_text, "validUntil": self.default_valid_until}, ensure_ascii=False)
        return self.default_text


_MEMORY_ID = re.compile(r'<memory id="([^"]+)"')


def usage_of(body: dict[str, Any], content: str | None) -> dict[str, int]:
    """Deterministic token counts for a request and its answer: a token every four UTF-8 bytes of
    the messages' and the answer's text (what a tokenizer gives English, about)."""
    asked = sum(len(str(m.get("content", "")).encode()) for m in body.get("messages", []))
    prompt, answer = -(-asked // 4), -(-len((content or "").encode()) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}


def completion(
    content: str | None, model: str = "", finish_reason: str = "stop", usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A chat.completion envelope around ``content``."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
