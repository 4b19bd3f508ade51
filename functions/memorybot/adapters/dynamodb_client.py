"""The low-level DynamoDB client every store is built on: short timeouts, bounded retries."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 5
MAX_ATTEMPTS = 4  # "standard" retry mode: the first call and up to three retries, with jittered backoff


def dynamodb_client() -> Any:
    """A low-level DynamoDB client with short timeouts and bounded retries.

    No endpoint argument: boto3 reads AWS_ENDPOINT_URL_DYNAMODB itself, which is how
    the local stack points every client at moto.
    """
    config = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
    )
    return boto3.client("dynamodb", config=config)
