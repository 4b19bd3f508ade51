"""The local stack as a real server in a subprocess (`memorybot local --port 0`), with a fake
Jev on loopback as its decision model and the built-in recorder as Discord."""

from __future__ import annotations

import itertools

import httpx
import pytest
from stack_process import StackProcess, loopback_models

from loopback.jev_server import JevServer
from memorybot.local.client import LocalClient, find_admin_secret, find_signing_key

_channels = itertools.count(1300000000000000001)


@pytest.fixture(scope="session")
def jev():
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as server:
        yield server


@pytest.fixture(scope="session")
def stack(jev, tmp_path_factory):
    """(base URL, state dir) of a running local stack; stopped at the end of the session."""
    state_dir = tmp_path_factory.mktemp("memorybot-state")
    # A short retry deadline: a Jev that stays down is given up on in a second per attempt.
    env = {**loopback_models(jev.url), "MEMORYBOT_MODEL_DEADLINE": "1"}
    running = StackProcess(state_dir, env)
    yield running.url, state_dir
    running.stop()


@pytest.fixture
def person(stack, jev):
    """A terminal client for a named person, signing with the stack's local key."""
    url, state_dir = stack
    jev.clear()
    clients: list[LocalClient] = []
    channel = str(next(_channels))  # each test talks in its own channel

    def make(name: str) -> LocalClient:
        client = LocalClient(
            url,
            name,
            find_signing_key(state_dir),
            channel,
            http=httpx.Client(timeout=60),
            admin_secret=find_admin_secret(state_dir),
        )
        client.catch_up()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.http.close()


@pytest.fixture(scope="session")
def admin(stack) -> dict[str, str]:
    """The header the stack's /local/* routes (and rollback) ask for."""
    _, state_dir = stack
    return {"Authorization": f"Bearer {find_admin_secret(state_dir)}"}
