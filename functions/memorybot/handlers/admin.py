"""The admin function: ``POST /memory/rollback`` and ``POST /memory/import`` (API Gateway proxy
event, v1 or v2), told apart by the request's path.

Authorisation comes first and nothing is read before it; the answers carry memory ids and
counts only, never memory text.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import admin_api, bootstrap
from . import admin_endpoint, event_path, http_response, log_core_with

logger = Logger(service="memorybot-admin")
log_core_with(logger)

IMPORT_PATH = "/memory/import"


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context) -> dict:
    c = bootstrap.container()
    if event_path(event).rstrip("/").endswith(IMPORT_PATH):
        status, answer = admin_endpoint(c, event, logger, admin_api.IMPORT, lambda c: c.importer)
        logger.info(
            "import answered",
            extra={"status": status, "imported": answer.get("imported"), "unchanged": answer.get("unchanged")},
        )
        return http_response(status, answer)
    status, answer = admin_endpoint(c, event, logger, admin_api.ROLLBACK, lambda c: c.rollback)
    logger.info("rollback answered", extra={"status": status, "run_id": answer.get("runId")})
    return http_response(status, answer)
