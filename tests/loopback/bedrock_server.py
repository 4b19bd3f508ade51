"""A stand-in for the Bedrock Runtime endpoint: above its quota it answers Bedrock's own
throttling error (429, ``x-amzn-ErrorType: ThrottlingException``), which botocore parses
as a ``ClientError`` with that code. Answers to ``POST /model/<id>/converse`` are scripted
with the common API (``answer``, ``answer_once``).

``POST /model/<id>/invoke`` with a Titan Text Embeddings V2 body (``inputText``, ``dimensions``,
``normalize``) is answered, unless scripted, with a deterministic vector of that size (the
offline stand-in's hashed n-grams, so related texts come out close), as Titan answers it:
``{"embedding": [...], "inputTextTokenCount": n}``. ``embedded_texts()`` lists the texts sent."""

from __future__ import annotations

import json
from urllib.parse import quote, unquote

from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel

from . import Answer, LoopbackServer, Recorded


class BedrockServer(LoopbackServer):
    @staticmethod
    def converse_path(model_id: str) -> str:
        return f"/model/{model_id}/converse"

    @staticmethod
    def invoke_path(model_id: str) -> str:
        """As botocore sends it: the model id percent-encoded (``:`` is ``%3A``)."""
        return f"/model/{quote(model_id, safe='')}/invoke"

    def embedded_texts(self) -> list[str]:
        return [r.json["inputText"] for r in self.requests if r.path.endswith("/invoke")]

    def default_answer(self, request: Recorded) -> Answer:
        if request.method != "POST" or not unquote(request.path).endswith("/invoke"):
            return super().default_answer(request)
        try:
            body = json.loads(request.body)
            text, dimensions = body["inputText"], int(body.get("dimensions", 1024))
        except (ValueError, KeyError, TypeError):
            return Answer(
                400, {"message": "Malformed input request"}, headers={"x-amzn-ErrorType": "ValidationException"}
            )
        if dimensions not in (256, 512, 1024) or not text:
            return Answer(400, {"message": "invalid dimensions"}, headers={"x-amzn-ErrorType": "ValidationException"})
        vector = OfflineEmbeddingModel(dimensions).embed_one(text).vector
        return Answer(body={"embedding": list(vector), "inputTextTokenCount": len(text.split())})

    def throttled_answer(self, wait: float) -> Answer:
        return Answer(
            429,
            {"message": "Too many requests, please wait before trying again."},
            headers={"x-amzn-ErrorType": "ThrottlingException"},
        )
