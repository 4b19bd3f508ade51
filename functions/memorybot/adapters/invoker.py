"""Async hand-off to the workers.

Deployed: a Lambda ``Event`` invocation (Lambda queues it and retries failures).
Locally: a pool of background threads in the same process that calls the same handler
functions, with Lambda's retries, and a ``drain`` that waits for all of it.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..core.record.jobs import Job

logger = logging.getLogger(__name__)

ASYNC_RETRIES = 2  # what Lambda does for a failed asynchronous invocation


def lambda_client() -> Any:
    import boto3  # only when the first hand-off happens

    return boto3.client("lambda")


class LambdaInvoker:
    def __init__(self, function_names: Mapping[str, str], client_factory: Callable[[], Any]) -> None:
        self._names = dict(function_names)
        self._client_factory = client_factory
        self._client: Any = None

    def invoke(self, job: Job) -> None:
        name = self._names.get(job.WORKER)
        if not name:
            raise LookupError(f"no function configured for worker {job.WORKER!r}")
        if self._client is None:
            self._client = self._client_factory()
        self._client.invoke(FunctionName=name, InvocationType="Event", Payload=json.dumps(job.to_json()).encode())


@dataclass
class LocalContext:
    """Enough of the Lambda context object for Powertools."""

    function_name: str
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


class LocalInvoker:
    def __init__(
        self, handlers: Mapping[str, Callable[[dict, Any], Any]], *, max_workers: int = 4, retries: int = ASYNC_RETRIES
    ) -> None:
        self._handlers = dict(handlers)
        self._retries = retries
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="worker")
        self._pending = 0
        self._idle = threading.Condition()
        self.failures: list[tuple[str, str]] = []  # (worker, error type) after every retry failed

    def invoke(self, job: Job) -> None:
        worker = job.WORKER
        handler = self._handlers[worker]
        event = json.loads(json.dumps(job.to_json()))  # what Lambda would deliver: JSON, a copy
        with self._idle:
            self._pending += 1
        self._pool.submit(self._run, worker, handler, event)

    def _run(self, worker: str, handler: Callable[[dict, Any], Any], event: dict) -> None:
        try:
            for attempt in range(self._retries + 1):
                try:
                    handler(event, LocalContext(f"memorybot-{worker}"))
                    return
                except Exception as exc:  # noqa: BLE001 - retried like Lambda, then recorded
                    logger.warning(
                        "worker failed", extra={"worker": worker, "attempt": attempt + 1, "error": type(exc).__name__}
                    )
                    if attempt == self._retries:
                        self.failures.append((worker, type(exc).__name__))
        finally:
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no invocation is pending (including ones started by workers). False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
