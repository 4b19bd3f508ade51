"""Shared fixtures: one moto DynamoDB server on loopback per test session, fresh tables per test,
and the front door's loopback Discord and container (their helpers are in frontdoor.py)."""

from __future__ import annotations

import itertools
import os

import pytest

import hypothesis_profiles  # noqa: F401 - loads the Hypothesis profile before any test module is imported
from fakes import ScriptedChat, ScriptedJev
from frontdoor import PUBLIC_KEY, RecordingInvoker
from memorybot import bootstrap
from memorybot.adapters.discord_rest import DiscordRest
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.discord.signature import Verifier
from memorybot.local import discord_recorder, moto_dynamo, moto_store

_prefixes = itertools.count(1)


def _handed_out(item: pytest.Item) -> int:
    if item.path.name == "test_checks.py":  # the CDK synths the other infra modules wait for
        return 0
    return 1 if item.path.name.startswith("test_faults_") else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With parallel workers, the module that makes the CDK synths is handed out first (an infra
    module reached before they are done waits for them, idle), then the fault-injection modules
    (among the longest), so that the other worker fills in around them instead of one of them
    running alone at the end. A stable sort: every module keeps its tests' order, and the other
    modules theirs."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_handed_out)


@pytest.fixture(scope="session")
def moto_server():
    server = moto_dynamo.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def moto_in_process():
    """moto's DynamoDB without the loopback hop (faults.InProcessDynamo), for the fault-injection
    modules' tens of thousands of requests."""
    from faults import InProcessDynamo

    return InProcessDynamo()


@pytest.fixture
def dynamo(moto_server):
    """(boto3 client, Settings) with every table freshly created under a unique prefix."""
    client = moto_server.client()
    prefix = f"t{next(_prefixes)}-"
    moto_dynamo.create_tables(client, prefix)
    settings = Settings.from_env({"MEMORYBOT_TABLE_PREFIX": prefix})
    return client, settings


@pytest.fixture
def serialised_moto():
    """moto's DynamoDB behind the local store's layer (moto_store): one request at a time, and
    transactions that journal only their own items. The session's moto server installs it; tests
    that drive moto in-process (mock_aws) name this fixture to have it too."""
    moto_store.install()


@pytest.fixture
def discord_api():
    recorder = discord_recorder.DiscordRecorder()
    server, base = discord_recorder.serve(recorder)
    yield recorder, base
    server.shutdown()
    server.server_close()


@pytest.fixture
def front(dynamo, discord_api, monkeypatch):
    """A container on moto tables, the loopback Discord recorder and scripted models, installed as
    the process's container so the handlers use it."""
    client, settings = dynamo
    recorder, base = discord_api
    c = Container(
        settings,
        dynamodb_client=client,
        decision_model=ScriptedJev(),
        chat_model=ScriptedChat(reply="nice to meet you"),
        invoker=RecordingInvoker(),
        discord=DiscordRest(base, "test-token", sleep=lambda s: None),
        discord_interactive=DiscordRest(base, "test-token", timeout=1.0, max_attempts=1),
        discord_webhooks=DiscordRest(base, None, sleep=lambda s: None),
        signature_verifier=Verifier(PUBLIC_KEY),
    )
    monkeypatch.setattr(bootstrap, "container", lambda: c)
    c.recorder = recorder
    return c
