"""A stand-in for the Bedrock Runtime endpoint: above its quota it answers Bedrock's own
throttling error (429, ``x-amzn-ErrorType: ThrottlingException``), which botocore parses
as a ``ClientError`` with that code. Answers to ``POST /model/<id>/converse`` are scripted
with the common API (``answer``, ``answer_once``)."""

from __future__ import annotations

from . import Answer, LoopbackServer


class BedrockServer(LoopbackServer):
    @staticmethod
    def converse_path(model_id: str) -> str:
        return f"/model/{model_id}/converse"

    def throttled_answer(self, wait: float) -> Answer:
        return Answer(
            429,
            {"message": "Too many requests, please wait before trying again."},
            headers={"x-amzn-ErrorType": "ThrottlingException"},
        )
