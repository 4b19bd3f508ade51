"""The erase function: ``POST /memory/erase`` (API Gateway proxy event, v1 or v2).

Its own role is the one exception to the append-only ledger: it may redact before/after
of ledger rows (and nothing else). Authorisation comes first; answers carry counts only.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import bootstrap, erasure
from . import http_response, log_core_with

logger = Logger(service="memorybot-erase")
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
        status, answer = erasure.handle(
            container.erasure,
            headers.get("authorization"),
            event.get("body"),
            lambda: container.settings.secret(ADMIN_SECRET),
            base64_encoded=bool(event.get("isBase64Encoded")),
        )
    except Exception as exc:  # noqa: BLE001 - every step is idempotent: the caller may simply retry
        logger.warning("erasure failed", extra={"error": type(exc).__name__})
        status, answer = 503, {"error": "erasure interrupted; retry the request"}
    logger.info("erasure answered", extra={"status": status})
    return http_response(status, answer)
