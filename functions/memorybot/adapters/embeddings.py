"""Embedding models for relevance (core/prompting/selection.py): Amazon Bedrock Titan Text Embeddings V2
and any OpenAI-compatible ``/v1/embeddings`` server.

Both go through the shared retry policy and the process's limiter (``retry.py``), as every
model call does: throttles and transient failures are retried until the call's deadline, then
``ModelUnavailable``; anything else is a ``ModelError`` at once. Vectors are L2-normalised here
whatever the server did, and stamped with ``model_id`` (model and size), so that vectors of a
different model or size are never compared.

Titan V2 embeds one text per ``InvokeModel`` call (body ``{"inputText", "dimensions",
"normalize": true}``; 256, 512 or 1024 dimensions); several texts are sent as concurrent
calls, each holding its own limiter slot. The OpenAI-compatible API takes a list in one call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Unpack

from ..core.record.domain import Embedding
from ..core.record.ports import ModelError
from . import bedrock
from .bedrock import bedrock_client
from .json_http import JsonService, ServiceOptions, service_options
from .metering import NO_METER
from .retry import Retrier, retrier_for

if TYPE_CHECKING:
    from ..config import Settings

TITAN_DIMENSIONS = (256, 512, 1024)
TITAN_MAX_CHARS = 50_000  # the model's documented input limit (8,192 tokens, ~50,000 characters)
EMBED_CONCURRENCY = 8  # Titan calls of one embed() at once (the limiter still bounds the process)


def normalised(values: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(math.fsum(x * x for x in values))
    if not norm:
        raise ModelError("embedding: a zero vector")
    return tuple(x / norm for x in values)


def _vector(raw: object, what: str) -> tuple[float, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(x, int | float) for x in raw):
        raise ModelError(f"{what}: no embedding in the answer")
    return normalised([float(x) for x in raw])


class BedrockTitanEmbeddings:
    """``amazon.titan-embed-text-v2:0`` (or a compatible id) through ``bedrock-runtime`` InvokeModel."""

    def __init__(self, client: Any, model: str, dimensions: int, retrier: Retrier | None = None) -> None:
        if dimensions not in TITAN_DIMENSIONS:
            raise ValueError(f"Titan embedding dimensions must be one of {TITAN_DIMENSIONS}, not {dimensions}")
        self._client = client
        self._model = model
        self.dimensions = dimensions
        self.model_id = f"{model}@{dimensions}"
        self._retrier = retrier or Retrier()

    @classmethod
    def from_settings(cls, settings: Settings) -> BedrockTitanEmbeddings:
        return cls(
            bedrock_client(settings),
            settings.bedrock_embedding_model_id,
            settings.embedding_dimensions,
            retrier_for(settings),
        )

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        if len(texts) <= 1:
            return [self._one(t) for t in texts]
        with ThreadPoolExecutor(max_workers=min(EMBED_CONCURRENCY, len(texts))) as pool:
            return list(pool.map(self._one, texts))

    def _one(self, text: str) -> Embedding:
        body = json.dumps({"inputText": text[:TITAN_MAX_CHARS], "dimensions": self.dimensions, "normalize": True})
        with (self._retrier.meter or NO_METER).call("embed", self._model) as call:
            answer = self._retrier.call(lambda _remaining: self._attempt(body), "bedrock embeddings")
            if isinstance(answer, dict):
                call.usage(answer.get("inputTextTokenCount"), 0)
        vector = _vector(answer.get("embedding") if isinstance(answer, dict) else None, "bedrock embeddings")
        if len(vector) != self.dimensions:
            raise ModelError("bedrock embeddings: wrong dimensions")
        return Embedding(self.model_id, vector)

    def _attempt(self, body: str) -> object:
        def invoke() -> object:
            response = self._client.invoke_model(
                modelId=self._model, body=body, contentType="application/json", accept="application/json"
            )
            return json.loads(response["body"].read())

        # Classified as the converse calls are: throttles until the deadline, transient errors a
        # few times, anything else at once.
        return bedrock.classified("bedrock embeddings", invoke)


class OpenAIEmbeddings:
    """``POST {OPENAI_BASE_URL}/embeddings`` with ``{"model", "input": [...]}`` (and ``dimensions``
    when set: only some models accept it)."""

    def __init__(self, base_url: str, model: str, *, dimensions: int = 0, **options: Unpack[ServiceOptions]) -> None:
        if not base_url or not model:
            raise ValueError("OPENAI_BASE_URL and OPENAI_EMBEDDING_MODEL are required for openai embeddings")
        self._model = model
        self._dimensions = dimensions
        self.model_id = f"{model}@{dimensions or 'native'}"
        self._service = JsonService(base_url, **options)

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbeddings:
        return cls(
            settings.openai_base_url,
            settings.openai_embedding_model,
            dimensions=settings.embedding_dimensions,
            **service_options(settings, "OPENAI_API_KEY"),
        )

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        if not texts:
            return []
        body: dict[str, Any] = {"model": self._model, "input": list(texts), "encoding_format": "float"}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        what = "embeddings"
        with (self._service.retrier.meter or NO_METER).call("embed", self._model) as call:
            response = self._service.post("/embeddings", body, what)
            if not response.is_success:
                raise ModelError(f"embeddings: HTTP {response.status_code}")
            try:
                answer = json.loads(response.content)
            except ValueError as exc:
                raise ModelError("embeddings: unexpected body") from exc
            usage = answer.get("usage") if isinstance(answer, dict) else None
            if isinstance(usage, dict):
                call.usage(usage.get("prompt_tokens"), 0)
        try:
            data = answer["data"]
            ordered = sorted(data, key=lambda d: d.get("index", 0))
            vectors = [_vector(d["embedding"], what) for d in ordered]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError("embeddings: unexpected body") from exc
        if len(vectors) != len(texts):
            raise ModelError("embeddings: wrong number of vectors")
        return [Embedding(self.model_id, v) for v in vectors]
