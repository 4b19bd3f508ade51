"""How many times a worker's job found the model unavailable: a counter per job in the dedup table.

Lambda retries a failed asynchronous invocation ``async_retries`` times and does not tell the
function which attempt it is running. A worker whose model stays unavailable raises, so that
Lambda runs the job again later; before raising it counts the attempt here. When the count
passes ``async_retries``, no retry is left, and the worker applies the design's rule instead
(no decision, nothing written; the reply worker apologises) and says so (a metric).
"""

from __future__ import annotations

import time
from typing import Any

from ..tables import DEDUP, DEDUP_TTL_SECONDS
from .dynamodb_items import int_of, n, s

KEY_PREFIX = "memorybot.unavailable"  # beside Powertools' "memorybot.<worker>#..." idempotency keys


class DynamoAttemptCounter:
    def __init__(self, client: Any, table_name: str, *, clock=time.time) -> None:
        self._client = client
        self._table = table_name
        self._clock = clock

    def count(self, worker: str, job_id: str) -> int:
        """Count one more unavailable attempt of the job; the count including this one."""
        answer = self._client.update_item(
            TableName=self._table,
            Key={DEDUP.partition.name: s(f"{KEY_PREFIX}.{worker}#{job_id}")},
            UpdateExpression="ADD attempts :one SET #expiry = if_not_exists(#expiry, :expiry)",
            ExpressionAttributeNames={"#expiry": DEDUP.ttl_attribute},
            ExpressionAttributeValues={
                ":one": n(1),
                ":expiry": n(int(self._clock()) + DEDUP_TTL_SECONDS),
            },
            ReturnValues="UPDATED_NEW",
        )
        return int_of(answer["Attributes"]["attempts"])
