"""The nightly run's steps, one thin handler per state of the state machine (one Lambda each):
claim -> plan -> speaker (the Distributed Map's child; speaker_failed is its Catch) -> review
-> finish. The use cases are ``nightly_steps``; each handler parses its payload there first,
so a payload that does not parse is refused (``BadJob``, logged by field names) before
anything is read or written, and the execution fails loudly instead of running on it.

EventBridge starts at least once: the claim makes a second start for the same day a no-op.
Logs carry ids and counts, never text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from .. import bootstrap
from ..core import nightly_steps
from ..core.domain import NIGHTLY_EXECUTION_TIMEOUT
from ..core.jobs import BadJob
from . import log_core_with

logger = Logger(service="memorybot-nightly")
log_core_with(logger)


def _step(name: str, event: Any, run: Callable[[Any, Any], dict]) -> dict:
    if isinstance(event, dict):
        logger.append_keys(step=name, run_id=event.get("run_id"))
    try:
        answer = run(bootstrap.container().consolidator, event)
    except BadJob as exc:
        logger.error("nightly payload refused", extra={"reason": str(exc)})
        raise
    logger.info("nightly step done", extra={k: v for k, v in answer.items() if k in ("run_id", "status", "speakers")})
    return answer


@logger.inject_lambda_context(clear_state=True)
def claim(event: dict, context) -> dict:
    # Held for the execution's whole timeout: a second start for the day finds it claimed.
    return _step("claim", event, lambda c, e: nightly_steps.claim(c, e, NIGHTLY_EXECUTION_TIMEOUT))


@logger.inject_lambda_context(clear_state=True)
def plan(event: dict, context) -> dict:
    return _step("plan", event, nightly_steps.plan)


@logger.inject_lambda_context(clear_state=True)
def speaker(event: dict, context) -> dict:
    return _step("speaker", event, nightly_steps.speaker)


@logger.inject_lambda_context(clear_state=True)
def speaker_failed(event: dict, context) -> dict:
    return _step("speaker_failed", event, nightly_steps.speaker_failed)


@logger.inject_lambda_context(clear_state=True)
def review(event: dict, context) -> dict:
    return _step("review", event, nightly_steps.review)


@logger.inject_lambda_context(clear_state=True)
def finish(event: dict, context) -> dict:
    return _step("finish", event, nightly_steps.finish)
