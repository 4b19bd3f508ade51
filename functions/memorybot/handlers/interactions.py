"""The interactions function: Discord's signed POST in, an answer within 3 seconds out.

Imports stay lean for cold starts: no httpx, no model adapters, no boto3 until used.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..discord import interactions
from ..discord.signature import SignatureError
from . import http_request, http_response, log_core_with, measured

logger = Logger(service="memorybot-interactions")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    headers, body = http_request(event)
    # The invocation's context travels with the call: the dedup of /memory show times its in-progress record by it.
    container = bootstrap.container()
    with measured(container, traced=False):
        return _respond(container.for_invocation(context), headers, body)


def _respond(deps: bootstrap.Invocation, headers: dict[str, str], body: bytes) -> dict:
    try:
        deps.signature_verifier.verify(headers, body)
    except SignatureError as exc:
        logger.info("signature refused", extra={"reason": str(exc)})
        return http_response(401, {"error": "invalid request signature"})
    try:
        status, answer = interactions.respond(body, deps)
    except Exception:  # noqa: BLE001 - never a 500 to Discord: a polite ephemeral instead
        logger.exception("interaction failed")
        status, answer = 200, interactions.error_answer(body)
    return http_response(status, answer)
