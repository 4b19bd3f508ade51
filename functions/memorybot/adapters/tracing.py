"""X-Ray through Powertools Tracer: a subsegment around each model request (``## model <purpose>``,
annotated with its purpose and model id) and, through the Tracer's patch of botocore, one
around every DynamoDB and S3 request. So a slow turn shows where its time went.

The Tracer is built by the first worker invocation that asks for it (``start``), never on import:
it costs about as much to import as boto3, which the interactions function's cold start does
not pay (that function makes no model call; its table calls show in its invocation's segment).
Outside Lambda Powertools leaves tracing off by itself, so the local stack and the tests trace
nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_tracer: Any = None


def start(service: str) -> None:
    """Build the process's Tracer once (it patches botocore: every later table request is traced)."""
    global _tracer
    if _tracer is not None:
        return
    with _lock:
        if _tracer is None:
            from aws_lambda_powertools import Tracer

            _tracer = Tracer(service=service)


@contextmanager
def subsegment(name: str, **annotations: str) -> Iterator[None]:
    """A subsegment named ``name`` around the block, when tracing was started; else nothing."""
    tracer = _tracer
    if tracer is None or getattr(tracer, "disabled", False):
        yield
        return
    with tracer.provider.in_subsegment(name) as segment:
        for key, value in annotations.items():
            segment.put_annotation(key, value)
        yield
