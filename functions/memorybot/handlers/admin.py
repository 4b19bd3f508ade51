"""The admin function: ``POST /memory/rollback`` and ``POST /memory/import`` (API Gateway proxy
event, v1 or v2), told apart by the request's path.

Authorisation comes first and nothing is read before it; the answers carry memory ids and
counts only, never memory text.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import admin_api
from . import admin_function, event_path, log_core_with

logger = Logger(service="memorybot-admin")
log_core_with(logger)

IMPORT_PATH = "/memory/import"

rollback = admin_function(logger, admin_api.ROLLBACK, lambda c: c.rollback, "rollback answered", run_id="runId")
import_memories = admin_function(
    logger,
    admin_api.IMPORT,
    lambda c: c.importer,
    "import answered",
    imported="imported",
    unchanged="unchanged",
    already_here="alreadyHere",
    refused="refused",
)


def handler(event: dict, context) -> dict:
    route = import_memories if event_path(event).rstrip("/").endswith(IMPORT_PATH) else rollback
    return route(event, context)
