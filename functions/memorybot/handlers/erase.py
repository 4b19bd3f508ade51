"""The erase function: ``POST /memory/erase`` (API Gateway proxy event, v1 or v2).

Its own role is the one exception to the append-only ledger: it may redact before/after
of ledger rows (and nothing else). Authorisation comes first; answers carry counts only.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from .. import admin_api
from . import admin_function, log_core_with

logger = Logger(service="memorybot-erase")
log_core_with(logger)

handler = admin_function(logger, admin_api.ERASE, lambda c: c.erasure, "erasure answered")
