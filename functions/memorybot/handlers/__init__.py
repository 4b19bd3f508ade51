"""One thin module per Lambda function: event in, core call, response out.

Shared here: API Gateway proxy events (v1 and v2), the workers' one typed edge (``job_worker``)
and the admin routes' one edge. Each entry point resolves the process's container once and
hands it on; nothing below it fetches the container again.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from .. import bootstrap
from ..core.record.jobs import BadJob, Job

if TYPE_CHECKING:
    from ..admin_api import AdminRoute
    from ..bootstrap import Container

J = TypeVar("J", bound=Job)


def log_core_with(logger: Any) -> None:
    """Let the core's stdlib loggers (``memorybot.*``) write through this function's Powertools
    Logger: same JSON lines, level and Lambda context, so their IDs-only records reach the logs."""
    import logging

    from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

    logging.getLogger("memorybot")  # the parent the core's loggers propagate to
    copy_config_to_registered_loggers(source_logger=logger, include={"memorybot"})


def http_request(event: dict) -> tuple[dict[str, str], bytes]:
    """(headers with lower-case names, raw body bytes) of an API Gateway proxy event."""
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8")
    return headers, raw


def http_response(status: int, body: Any) -> dict:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def job_worker(
    job_type: type[J], logger: Any, use_case: Callable[[Container, J], dict[str, Any]]
) -> Callable[[Any, Any], dict[str, Any]]:
    """A worker's Lambda entry: the event parsed once into a ``job_type``; a bad one refused with
    one ERROR line (by field names) and answered without raising, since a retry of a payload that
    can never parse would only fail again and end in the dead-letter queue; then ``use_case``
    with the typed job, at most once per interaction id (the dedup table, 7-day expiry): a Lambda
    retry of a finished job returns the stored answer, one still running raises (Lambda retries)."""

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: Any, context: Any) -> dict[str, Any]:
        logger.append_keys(interaction_id=event.get("interaction_id") if isinstance(event, dict) else None)
        try:
            job = job_type.from_json(event)
        except BadJob as exc:
            logger.error("job refused", extra={"job": job_type.__name__, "reason": str(exc)})
            return {"status": "refused"}
        c = bootstrap.container()
        with measured(c):
            return c.idempotency.run(job_type.WORKER, job.interaction_id, lambda: use_case(c, job), invocation=context)

    return handler


@contextmanager
def measured(c: Container, *, traced: bool = True) -> Iterator[None]:
    """One invocation's metrics written out when it ends, however it ends (the model calls of a job
    that raises were still made); ``traced``: its model and table calls as X-Ray subsegments (the
    workers; the interactions function skips the Tracer's import: see adapters/tracing.py)."""
    if traced:
        from ..adapters import tracing

        tracing.start(c.settings.service_name)
    try:
        yield
    finally:
        try:
            c.metrics.flush()
        except Exception as exc:  # noqa: BLE001 - a metric never fails the work it measured
            logging.getLogger(__name__).warning("metrics not written", extra={"error": type(exc).__name__})


def retries_spent(c: Container, worker: str, interaction_id: str) -> bool:
    """Called when the job found the model unavailable (or, for "Remember this", failed otherwise):
    counts the attempt, and answers whether Lambda has no retry left for it (then the caller gives
    up instead of raising, or tells the person before it raises)."""
    return c.unavailable_attempts.count(worker, interaction_id) > c.settings.async_retries


def count_metric(c: Container, name: str) -> None:
    """One count of ``name`` as a CloudWatch metric (Powertools' embedded metric format on stdout)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=c.settings.metrics_namespace):
        pass


ADMIN_SECRET = "MEMORYBOT_ADMIN_SECRET"


def event_path(event: dict) -> str:
    """The request's path: the REST API's resource (v1), else the raw path (v2, which may carry the stage)."""
    return str(
        event.get("resource")
        or event.get("path")
        or event.get("rawPath")
        or (event.get("requestContext") or {}).get("http", {}).get("path")
        or ""
    )


def admin_function(
    logger: Any, route: AdminRoute, use_case: Callable[[Container], Any], message: str, **logged: str
) -> Callable[[Any, Any], dict]:
    """An admin route's Lambda entry (rollback, erase, import): ``admin_endpoint`` with the process's
    container, one INFO line (``message``: the status, and ``logged``'s answer fields, ids and
    counts only) and the HTTP response."""

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict, context: Any) -> dict:
        status, answer = admin_endpoint(bootstrap.container(), event, logger, route, use_case)
        logger.info(message, extra={"status": status, **{key: answer.get(field) for key, field in logged.items()}})
        return http_response(status, answer)

    return handler


def admin_endpoint(
    container: Container, event: dict, logger: Any, route: AdminRoute, use_case: Callable[[Container], Any]
) -> tuple[int, dict]:
    """One admin route (``admin_api``: rollback, erase, import): POST only; the Bearer admin secret is
    checked before anything is read; any failure is a 503 the operator may simply retry (every
    step of each use case is conditional or idempotent)."""
    method = event.get("httpMethod") or (event.get("requestContext") or {}).get("http", {}).get("method") or "POST"
    if method.upper() != "POST":
        return 405, {"error": "method not allowed"}
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        return route.answer(
            use_case(container),
            headers.get("authorization"),
            event.get("body"),
            lambda: container.settings.secret(ADMIN_SECRET),
            base64_encoded=bool(event.get("isBase64Encoded")),
        )
    except Exception as exc:  # noqa: BLE001 - answered 503: retried by the operator
        logger.warning(f"{route.name} failed", extra={"error": type(exc).__name__})
        return 503, {"error": f"{route.name} interrupted; retry the request"}
