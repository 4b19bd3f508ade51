"""The admin function: ``POST /memory/rollback`` (API Gateway proxy event, v1 or v2).

Authorisation comes first and nothing is read before it; the answer carries memory
ids only, never memory text.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap, rollback
from . import http_response, log_core_with

logger = Logger(service="memorybot-admin")
log_core_with(logger)

ADMIN_SECRET = "MEMORYBOT_ADMIN_SECRET"


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    method = event.get("httpMethod") or (event.get("requestContext") or {}).get("http", {}).get("method") or "POST"
    if method.upper() != "POST":
        return http_response(405, {"error": "method not allowed"})
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
    container = bootstrap.container()
    try:
        status, answer = rollback.handle(
            container.rollback,
            headers.get("authorization"),
            event.get("body"),
            lambda: container.settings.secret(ADMIN_SECRET),
            base64_encoded=bool(event.get("isBase64Encoded")),
        )
    except Exception as exc:  # noqa: BLE001 - each step is conditional: the caller may simply retry
        logger.warning("rollback failed", extra={"error": type(exc).__name__})
        status, answer = 503, {"error": "rollback interrupted; retry the request"}
    logger.info("rollback answered", extra={"status": status, "run_id": answer.get("runId")})
    return http_response(status, answer)
