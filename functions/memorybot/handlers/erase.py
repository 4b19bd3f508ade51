"""The erase function: ``POST /memory/erase`` (API Gateway proxy event, v1 or v2).

Its own role is the one exception to the append-only ledger: it may redact before/after
of ledger rows (and nothing else). Authorisation comes first; answers carry counts only.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import admin_api, bootstrap
from . import admin_endpoint, http_response, log_core_with

logger = Logger(service="memorybot-erase")
log_core_with(logger)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    status, answer = admin_endpoint(bootstrap.container(), event, logger, admin_api.ERASE, lambda c: c.erasure)
    logger.info("erasure answered", extra={"status": status})
    return http_response(status, answer)
