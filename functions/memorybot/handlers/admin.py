"""The admin function: ``POST /memory/rollback`` (API Gateway proxy event, v1 or v2).

Authorisation comes first and nothing is read before it; the answer carries memory
ids only, never memory text.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import admin_api
from . import admin_endpoint, http_response, log_core_with

logger = Logger(service="memorybot-admin")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    status, answer = admin_endpoint(event, logger, admin_api.ROLLBACK, lambda c: c.rollback)
    logger.info("rollback answered", extra={"status": status, "run_id": answer.get("runId")})
    return http_response(status, answer)
