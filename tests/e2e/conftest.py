"""The local stack as a real server in a subprocess (`memorybot local --port 0`), with a fake
Jev on loopback as its decision model and the built-in recorder as Discord."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading

import itertools

import httpx
import pytest

from loopback.jev_server import JevServer
from memorybot.local.client import LocalClient, find_signing_key

READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")
START_TIMEOUT_SECONDS = 60
_channels = itertools.count(1300000000000000001)
# The stack must not pick up a developer's real Discord or AWS settings.
SCRUBBED = (
    "DISCORD_API_BASE", "DISCORD_PUBLIC_KEY", "DISCORD_APPLICATION_ID", "DISCORD_BOT_TOKEN", "MEMORYBOT_ADMIN_SECRET",
    "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL", "MEMORYBOT_TABLE_PREFIX", "MEMORYBOT_CHAT_MODEL",
    "MEMORYBOT_FETCH_CHANNEL_HISTORY",
)


@pytest.fixture(scope="session")
def jev():
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as server:
        yield server


@pytest.fixture(scope="session")
def stack(jev, tmp_path_factory):
    """(base URL, state dir) of a running local stack; stopped at the end of the session."""
    state_dir = tmp_path_factory.mktemp("memorybot-state")
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update({"MEMORYBOT_DECISION_MODEL": "http", "JEV_URL": jev.url, "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen(
        [sys.executable, "-m", "memorybot.cli", "local", "--port", "0", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=state_dir,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    url, seen = None, []
    while url is None:
        try:
            line = lines.get(timeout=START_TIMEOUT_SECONDS)
        except queue.Empty:
            process.kill()
            pytest.fail("the local stack did not start:\n" + "".join(seen))
        seen.append(line)
        if match := READY.search(line):
            url = match.group(1)
    yield url, state_dir
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def person(stack, jev):
    """A terminal client for a named person, signing with the stack's local key."""
    url, state_dir = stack
    jev.clear()
    clients: list[LocalClient] = []
    channel = str(next(_channels))  # each test talks in its own channel

    def make(name: str) -> LocalClient:
        client = LocalClient(url, name, find_signing_key(state_dir), channel, http=httpx.Client(timeout=60))
        client.catch_up()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.http.close()
