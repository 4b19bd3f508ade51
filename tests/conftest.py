"""Shared fixtures: one moto DynamoDB server on loopback per test session, fresh tables per test."""

from __future__ import annotations

import itertools

import pytest

from memorybot.config import Settings
from memorybot.local import moto_dynamo

_prefixes = itertools.count(1)


@pytest.fixture(scope="session")
def moto_server():
    server = moto_dynamo.start()
    yield server
    server.stop()


@pytest.fixture
def dynamo(moto_server):
    """(boto3 client, Settings) with every table freshly created under a unique prefix."""
    client = moto_server.client()
    prefix = f"t{next(_prefixes)}-"
    moto_dynamo.create_tables(client, prefix)
    settings = Settings.from_env({"MEMORYBOT_TABLE_PREFIX": prefix})
    return client, settings
