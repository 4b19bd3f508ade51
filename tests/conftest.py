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


@pytest.fixture
def serialised_moto(monkeypatch):
    """Make moto's DynamoDB answer one request at a time, for tests with real concurrent threads.

    moto's TransactWriteItems is not thread-safe: a cancelled transaction restores a copy
    of the tables taken when it started, wiping writes other threads committed meanwhile.
    Real DynamoDB serialises per item; one request at a time is a stricter, faithful model.
    """
    import threading

    from moto.dynamodb.responses import DynamoHandler

    lock = threading.Lock()
    unlocked = DynamoHandler.call_action

    def call_action(self):
        with lock:
            return unlocked(self)

    monkeypatch.setattr(DynamoHandler, "call_action", call_action)
